package adapters

import "testing"

// TestStatedExitCode reads the exit code in each way an agent states it in
// a command's output, and none where the output states none.
func TestStatedExitCode(t *testing.T) {
	for _, tc := range []struct {
		out  string
		code int64
		ok   bool
	}{
		{"Exit code 128\nfatal: no upstream", 128, true},                // Claude Code
		{"Error: Exit code 2\nboom", 2, true},                           // Claude Code, older
		{"Exit code: 1", 1, true},                                       // Cline
		{"Chunk ID: 1\nProcess exited with code 3\nOutput:\n", 3, true}, // Codex
		{"Command: ls\nStdout: x\nExit Code: 4\n", 4, true},             // Gemini CLI
		{"done\n<exited with exit code 5>\n", 5, true},                  // Copilot CLI
		{"ok  \tproj\t0.01s\n", 0, false},
		{"the exit code 7 is documented", 0, false},
	} {
		if code, ok := StatedExitCode(tc.out); code != tc.code || ok != tc.ok {
			t.Errorf("StatedExitCode(%q) = %d, %v; want %d, %v", tc.out, code, ok, tc.code, tc.ok)
		}
	}
}
