package capture

import "github.com/agentreview/service/adapters/geminicli"

// geminiWatcher follows Gemini CLI's session files under its tmp folder
// (<project>/chats/): the JSONL files it appends to, and the older JSON
// files it rewrites whole on every message.
var geminiWatcher = watcher{agent: geminicli.Agent, file: geminicli.SessionFile}
