// Package agents lists every agent the service reads, for what must cover
// each of them: the tests of the import command and of the demo.
package agents

import (
	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/aider"
	"github.com/agentreview/service/adapters/claudecode"
	"github.com/agentreview/service/adapters/cline"
	"github.com/agentreview/service/adapters/codex"
	"github.com/agentreview/service/adapters/copilotcli"
	"github.com/agentreview/service/adapters/crush"
	"github.com/agentreview/service/adapters/geminicli"
	"github.com/agentreview/service/adapters/opencode"
	"github.com/agentreview/service/adapters/qwencode"
)

// All are the agents, in the order the README's table lists them.
var All = []adapters.Agent{
	claudecode.Agent, cline.Agent, codex.Agent, geminicli.Agent, copilotcli.Agent,
	opencode.Agent, qwencode.Agent, aider.Agent, crush.Agent,
}
