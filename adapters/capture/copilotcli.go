package capture

import "github.com/agentreview/service/adapters/copilotcli"

// copilotWatcher follows Copilot CLI's session-state folder (an
// events.jsonl per session, a line appended per event) and its older
// history-session-state folder (a JSON file rewritten whole).
var copilotWatcher = watcher{agent: copilotcli.Agent, file: copilotcli.IsSessionFile}
