package capture

import "github.com/agentreview/service/adapters/codex"

// codexWatcher follows Codex's rollouts under its sessions folder
// (YYYY/MM/DD/rollout-<time>-<id>.jsonl, a day's folder made as the day
// comes), which it appends to as the session runs and when it resumes it.
var codexWatcher = watcher{agent: codex.Agent, file: codex.SessionFile}
