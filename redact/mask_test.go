package redact

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/agentreview/service/internal/term"
)

func TestMaskKeepsContext(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"bearer header", "curl -H 'Authorization: Bearer " + bearerValue + "' https://api",
			"curl -H 'Authorization: Bearer [bearer-token-1]' https://api"},
		{"basic header", "Authorization: Basic " + basicValue, "Authorization: Basic [basic-auth-1]"},
		{"url password only", "postgres://app:" + password + "@db.internal:5432/app",
			"postgres://app:[url-credentials-1]@db.internal:5432/app"},
		{"env value only", "export DATABASE_PASSWORD=" + envValue + "\nexport EDITOR=vim",
			"export DATABASE_PASSWORD=[env-secret-1]\nexport EDITOR=vim"},
		{"quoted env value", `SESSION_SECRET="` + envValue + `"`, `SESSION_SECRET="[env-secret-1]"`},
		{"whole private key block", "$ cat key.pem\n" + privateKey + "\n$ ls", "$ cat key.pem\n[private-key-1]\n$ ls"},
		{"generic json", `{"apiKey": "` + genericVal + `", "region": "eu-west-1"}`,
			`{"apiKey": "[generic-secret-1]", "region": "eu-west-1"}`},
		{"token in prose", "I pushed with " + ghToken + " as asked.", "I pushed with [github-token-1] as asked."},
		{"clean text unchanged", "ok  \texample.com/x\t0.012s", "ok  \texample.com/x\t0.012s"},
		// The GitHub token only has a word boundary once the key before it is
		// masked, so it is caught by the second scan.
		{"token right after another", googleKey + ghToken, "[google-api-key-1][github-token-1]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := NewMasker("").Mask(tc.in, "step 1"); got != tc.want {
				t.Errorf("Mask(%q) = %q; want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestMaskPlaceholderConsistency(t *testing.T) {
	m := NewMasker("")
	first := m.Mask("push with "+ghToken, "step 1 command")
	second := m.Mask("GH="+ghToken2+"\nretry with "+ghToken, "step 2 stdout")
	third := m.Mask("again "+ghToken, "step 2 stdout")

	for _, c := range []struct{ in, got, want string }{
		{"push with " + ghToken, first, "push with [github-token-1]"},
		{"GH=" + ghToken2 + "\nretry with " + ghToken, second, "GH=[github-token-2]\nretry with [github-token-1]"},
		{"again " + ghToken, third, "again [github-token-1]"},
	} {
		if c.got != c.want {
			t.Errorf("Mask(%q) = %q; want %q", c.in, c.got, c.want)
		}
	}

	want := []Finding{
		{Rule: "github-token", Confidence: Definite, Placeholder: "[github-token-1]",
			Preview: ghToken[:4] + "…" + ghToken[len(ghToken)-4:], Where: []string{"step 1 command", "step 2 stdout"}},
		{Rule: "github-token", Confidence: Definite, Placeholder: "[github-token-2]",
			Preview: ghToken2[:4] + "…" + ghToken2[len(ghToken2)-4:], Where: []string{"step 2 stdout"}},
	}
	got := m.Findings()
	if len(got) != len(want) {
		t.Fatalf("Findings() = %+v; want %+v", got, want)
	}
	for i := range want {
		if got[i].Rule != want[i].Rule || got[i].Confidence != want[i].Confidence ||
			got[i].Placeholder != want[i].Placeholder || got[i].Preview != want[i].Preview ||
			!slices.Equal(got[i].Where, want[i].Where) {
			t.Errorf("Findings()[%d] = %+v; want %+v", i, got[i], want[i])
		}
	}
	if counts := m.Counts(); !maps.Equal(counts, map[string]int{"github-token": 2}) {
		t.Errorf("Counts() = %v; want map[github-token:2]", counts)
	}
}

func TestMaskNumbersPerRule(t *testing.T) {
	m := NewMasker("")
	in := awsKey + " " + ghToken + " " + awsSTSKey + " " + npmToken
	want := "[aws-access-key-1] [github-token-1] [aws-access-key-2] [npm-token-1]"
	if got := m.Mask(in, "x"); got != want {
		t.Errorf("Mask(%q) = %q; want %q", in, got, want)
	}
	wantCounts := map[string]int{"aws-access-key": 2, "github-token": 1, "npm-token": 1}
	if counts := m.Counts(); !maps.Equal(counts, wantCounts) {
		t.Errorf("Counts() = %v; want %v", counts, wantCounts)
	}
}

func TestMaskIsStable(t *testing.T) {
	var all []string
	for _, tc := range secretCases() {
		all = append(all, tc.text)
	}
	in := strings.Join(all, "\n")
	m := NewMasker("/home/alice")
	once := m.Mask(in, "a")
	if again := m.Mask(in, "b"); again != once {
		t.Errorf("second Mask(%q) = %q; want %q", in, again, once)
	}
	if twice := m.Mask(once, "c"); twice != once {
		t.Errorf("Mask(%q) = %q; want it unchanged", once, twice)
	}
}

func TestMaskNeverLeaks(t *testing.T) {
	for _, tc := range secretCases() {
		t.Run(tc.name, func(t *testing.T) {
			got := NewMasker("").Mask(tc.text, "x")
			if strings.Contains(got, tc.value) {
				t.Errorf("Mask(%q) = %q; want %q masked", tc.text, got, tc.value)
			}
			if rule, ok := FirstDefinite(got); ok {
				t.Errorf("FirstDefinite(Mask(%q)) = %q; want no match", tc.text, rule)
			}
		})
	}
}

func TestPlaceholdersDoNotMatch(t *testing.T) {
	contexts := []string{
		"%s", "X_TOKEN=%s", `SECRET="%s"`, `"apiKey": "%s"`, "token: %s", "Authorization: Bearer %s",
		"Authorization: Basic %s", "postgres://u:%s@h/db", "curl -u a:%s https://x", "bearer %s",
		"aws_secret_access_key = %s", "SessionToken: %s", "password=%s%s",
	}
	for _, r := range rules {
		for _, n := range []string{"1", "12"} {
			ph := "[" + r.id + "-" + n + "]"
			for _, c := range contexts {
				text := strings.ReplaceAll(c, "%s", ph)
				if got := Scan(text); len(got) != 0 {
					t.Errorf("Scan(%q) = %v; want nothing", text, got)
				}
			}
		}
	}
}

func TestMaskHome(t *testing.T) {
	tests := []struct{ name, home, in, want string }{
		{"given home", "/home/alice", "cd /home/alice/src && ls /home/alice", "cd ~/src && ls ~"},
		{"given home with slash", "/Users/alice/", "open /Users/alice/Desktop", "open ~/Desktop"},
		{"other home", "/root", "/root/.cache and /rootfs/x", "~/.cache and /rootfs/x"},
		{"generic linux", "", "/home/bob/go/pkg/mod:/home/carol", "~/go/pkg/mod:~"},
		{"generic mac", "", `"cwd": "/Users/dana/work"`, `"cwd": "~/work"`},
		{"windows", "", `C:\Users\erin\repo and "C:\\Users\\erin\\repo"`, `~\repo and "~\\repo"`},
		{"not a home", "", "/mnt/home/bob /var/home/x /Users/Shared/x /home/", "/mnt/home/bob /var/home/x /Users/Shared/x /home/"},
		{"prefix of another user", "/home/al", "/home/alice/x", "~/x"},
		// Found by FuzzMask: the A: before the second path is inside the first.
		{"drive letter inside the previous path", "", `\Users\A:\\Users\\0`, "~:~"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMasker(tc.home)
			if got := m.Mask(tc.in, "x"); got != tc.want {
				t.Errorf("Mask(%q) = %q; want %q", tc.in, got, tc.want)
			}
			if f := m.Findings(); len(f) != 0 {
				t.Errorf("Findings() = %+v; want none for home paths", f)
			}
		})
	}
}

func TestMaskHomeAndSecret(t *testing.T) {
	m := NewMasker("/home/alice")
	in := "/home/alice/.env: API_TOKEN=" + envValue
	want := "~/.env: API_TOKEN=[env-secret-1]"
	if got := m.Mask(in, "x"); got != want {
		t.Errorf("Mask(%q) = %q; want %q", in, got, want)
	}
}

func TestPreview(t *testing.T) {
	tests := []struct{ value, want string }{
		{"ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_…6789"},
		{"AKIAABCDEFGHIJKLMNOP", "AKI…NOP"}, // 20 runes: a third is 6
		{"abcdefghijkl", "ab…kl"},
		{"hunter2", "h…2"},
		{"abcde", "…"},
		{"пароль-пароль-пароль-пароль", "паро…роль"},
	}
	for _, tc := range tests {
		t.Run(tc.value, func(t *testing.T) {
			if got := preview(tc.value); got != tc.want {
				t.Errorf("preview(%q) = %q; want %q", tc.value, got, tc.want)
			}
		})
	}
}

func TestMaskSameValueKeepsFirstPlaceholder(t *testing.T) {
	m := NewMasker("")
	first := m.Mask(`{"apiKey": "`+genericVal+`"}`, "a")
	second := m.Mask("export SERVICE_API_KEY="+genericVal, "b")
	if want := `{"apiKey": "[generic-secret-1]"}`; first != want {
		t.Errorf("Mask(json) = %q; want %q", first, want)
	}
	if want := "export SERVICE_API_KEY=[generic-secret-1]"; second != want {
		t.Errorf("Mask(env) = %q; want %q", second, want)
	}
	f := m.Findings()
	if len(f) != 1 || f[0].Confidence != Definite || !slices.Equal(f[0].Where, []string{"a", "b"}) {
		t.Errorf("Findings() = %+v; want one definite finding seen at a and b", f)
	}
}

func TestFindingsAreCopies(t *testing.T) {
	m := NewMasker("")
	m.Mask(ghToken, "a")
	f := m.Findings()
	f[0].Where[0] = "changed"
	if got := m.Findings()[0].Where[0]; got != "a" {
		t.Errorf("Findings()[0].Where[0] = %q after editing a copy; want %q", got, "a")
	}
}

// TestMaskKeep: a candidate value the reviewer ticked stays as it was,
// with the same placeholders for the others and the choice in the
// findings; a definite value is masked however it is listed.
func TestMaskKeep(t *testing.T) {
	other := strings.ToUpper(genericVal[:8]) + genericVal[8:]
	texts := []struct{ in, where string }{
		{`{"apiKey": "` + genericVal + `"}`, "step 1 payload.raw"},
		{"client_secret: " + other + "\npush with " + ghToken, "step 2 payload.stdout"},
		{"again: apiKey=" + genericVal, "step 3 payload.text"},
	}
	m := NewMasker("")
	m.Keep([]string{"[generic-secret-1]", "[github-token-1]", "[no-such-1]"})
	var got []string
	for _, tx := range texts {
		got = append(got, m.Mask(tx.in, tx.where))
	}
	want := []string{
		`{"apiKey": "` + genericVal + `"}`,
		"client_secret: [generic-secret-2]\npush with [github-token-1]",
		"again: apiKey=" + genericVal,
	}
	if !slices.Equal(got, want) {
		t.Errorf("Mask with [generic-secret-1] kept =\n%q\nwant\n%q", got, want)
	}
	kept := map[string]bool{}
	for _, f := range m.Findings() {
		kept[f.Placeholder] = f.Kept
	}
	if wantKept := map[string]bool{"[generic-secret-1]": true, "[generic-secret-2]": false, "[github-token-1]": false}; !maps.Equal(kept, wantKept) {
		t.Errorf("Findings kept = %v; want %v", kept, wantKept)
	}
	// Without Keep, the same texts give the same placeholders.
	plain := NewMasker("")
	for i, tx := range texts {
		out := plain.Mask(tx.in, tx.where)
		if i == 1 && out != want[1] {
			t.Errorf("Mask(%q) without Keep = %q; want %q", tx.in, out, want[1])
		}
	}
}

// TestMaskKeepNeverDefinite: a value first seen by the candidate rule and
// kept is masked from the moment a definite rule matches it too.
func TestMaskKeepNeverDefinite(t *testing.T) {
	m := NewMasker("")
	m.Keep([]string{"[generic-secret-1]"})
	first := m.Mask("client_secret: "+awsSecret, "step 1")
	second := m.Mask("aws_secret_access_key = "+awsSecret+"\n", "step 2")
	if first != "client_secret: "+awsSecret {
		t.Errorf("Mask(client_secret: value) = %q; want the kept candidate as it was", first)
	}
	if strings.Contains(second, awsSecret) {
		t.Errorf("Mask(push with token) = %q; want the token masked once a definite rule matched it (first was %q)", second, first)
	}
	for _, f := range m.Findings() {
		if f.Kept || f.Confidence != Definite {
			t.Errorf("finding %s is %s, kept %v; want definite and not kept", f.Placeholder, f.Confidence, f.Kept)
		}
	}
}

func TestIsMaskPlaceholder(t *testing.T) {
	for s, want := range map[string]bool{
		"[generic-secret-1]": true, "[aws-access-key-12]": true,
		"generic-secret-1": false, "[generic-secret]": false, "[<script>-1]": false, "[a-1] [b-2]": false,
		"[" + strings.Repeat("a", 100) + "-1]": false,
	} {
		if got := IsMaskPlaceholder(s); got != want {
			t.Errorf("IsMaskPlaceholder(%q) = %v; want %v", s, got, want)
		}
	}
}

// A secret printed in colour, or split by a colour code, is masked whole
// and is the same value, with the same placeholder, as where it is plain.
func TestMaskSecretsInColour(t *testing.T) {
	half := len(ghToken) / 2
	m := NewMasker("")
	for _, in := range []string{
		"token " + ghToken,
		"token \x1b[1m" + ghToken + "\x1b[22m",
		"token " + ghToken[:half] + "\x1b[31m" + ghToken[half:] + "\x1b[0m",
	} {
		got := m.Mask(in, "x")
		if shown, _ := term.Shown(got); shown != "token [github-token-1]" {
			t.Errorf("Mask(%q) = %q, shown %q; want %q", in, got, shown, "token [github-token-1]")
		}
	}
	if counts := m.Counts(); !maps.Equal(counts, map[string]int{"github-token": 1}) {
		t.Errorf("Counts() = %v; want map[github-token:1]", counts)
	}
}
