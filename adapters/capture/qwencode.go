package capture

import "github.com/agentreview/service/adapters/qwencode"

// qwenWatcher follows Qwen Code's chat recordings under its projects
// folder (<project>/chats/*.jsonl), which it appends to.
var qwenWatcher = watcher{agent: qwencode.Agent, file: qwencode.SessionFile}
