// Package agents lists every agent the service reads, for what must cover
// each of them: the tests of the import command and of the demo.
package agents

import (
	"slices"
	"strings"

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
	"github.com/agentreview/service/internal/shell"
)

// All are the agents, in the order the README's table lists them.
var All = []adapters.Agent{
	claudecode.Agent, cline.Agent, codex.Agent, geminicli.Agent, copilotcli.Agent,
	opencode.Agent, qwencode.Agent, aider.Agent, crush.Agent,
}

// ResumeCommand is the command line that reopens session id of an agent
// kind in that agent, in a POSIX shell: in dir first when it is a folder's
// absolute path (the session's workspace, where most agents look for their
// sessions; not "unknown", not a Windows path, which no POSIX shell would
// cd to). It is "" for a kind that cannot reopen a session by its id, or
// is not one of All.
func ResumeCommand(kind, id, dir string) string {
	i := slices.IndexFunc(All, func(a adapters.Agent) bool { return a.Kind == kind })
	if i < 0 || All[i].Resume == nil || id == "" {
		return ""
	}
	line := shell.Line(All[i].Resume(id)...)
	if strings.HasPrefix(dir, "/") {
		line = "cd " + shell.Quote(dir) + " && " + line
	}
	return line
}
