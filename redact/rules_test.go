package redact

import (
	"encoding/base64"
	"math/rand/v2"
	"strings"
	"testing"
)

// Alphabets for fake secrets.
const (
	alnum   = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	upper32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	digits  = "0123456789"
	hexLow  = "0123456789abcdef"
	b64     = alnum + "+/"
	b64url  = alnum + "-_"
)

// fake returns n pseudo-random characters from alphabet. Test secrets are made
// at run time from a fixed seed and split prefixes, so they look real but no
// secret-shaped string sits in the source for scanners to flag.
func fake(seed uint64, alphabet string, n int) string {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

func b64url64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// Fake secrets, one or more per rule.
var (
	awsKey      = "AK" + "IA" + fake(1, upper32, 16)
	awsSTSKey   = "AS" + "IA" + fake(2, upper32, 16)
	awsSecret   = fake(3, alnum+"+/", 40)
	awsSession  = fake(4, b64, 320)
	ghToken     = "gh" + "p_" + fake(5, alnum, 36)
	ghToken2    = "gh" + "p_" + fake(6, alnum, 36)
	ghAppToken  = "gh" + "s_" + fake(7, alnum, 36)
	ghPAT       = "github" + "_pat_" + fake(8, alnum, 22) + "_" + fake(9, alnum, 59)
	glToken     = "gl" + "pat-" + fake(10, alnum+"_-", 20)
	antKey      = "sk-" + "ant-api03-" + fake(11, b64url, 93) + "AA"
	oaiProject  = "sk-" + "proj-" + fake(12, b64url, 74) + "T3Blbk" + "FJ" + fake(13, b64url, 74)
	oaiLegacy   = "sk-" + fake(14, alnum, 20) + "T3Blbk" + "FJ" + fake(15, alnum, 20)
	slackBot    = "xo" + "xb-" + fake(16, digits, 12) + "-" + fake(17, digits, 13) + "-" + fake(18, alnum, 24)
	slackUser   = "xo" + "xp-" + fake(19, digits, 11) + "-" + fake(20, digits, 10) + "-" + fake(21, digits, 11) + "-" + fake(22, hexLow, 32)
	slackHook   = "https://hooks.slack.com/services/T" + fake(23, upper32, 8) + "/B" + fake(24, upper32, 10) + "/" + fake(25, alnum, 24)
	stripeLive  = "sk" + "_live_" + fake(26, alnum, 24)
	stripeTest  = "rk" + "_test_" + fake(27, alnum, 24)
	googleKey   = "AI" + "za" + "Sy" + fake(28, b64url, 33)
	npmToken    = "np" + "m_" + fake(29, alnum, 36)
	pypiToken   = "pypi-" + "AgEIcHlwaS5vcmc" + fake(30, b64url, 70)
	hfToken     = "h" + "f_" + fake(31, letters, 34)
	sendgridKey = "S" + "G." + fake(32, b64url, 22) + "." + fake(33, b64url, 43)
	jwtToken    = b64url64(`{"alg":"HS256","typ":"JWT"}`) + "." +
		b64url64(`{"sub":"1234567890","name":"Alice","iat":1516239022}`) + "." + fake(34, b64url, 43)
	bearerValue = fake(35, b64url, 40)
	basicValue  = base64.StdEncoding.EncodeToString([]byte("deploy:" + fake(36, alnum, 14)))
	password    = fake(37, alnum, 14)
	envValue    = fake(38, alnum, 18)
	genericVal  = fake(39, alnum, 32)
	privateKey  = pemBlock("RSA", 40)
	opensshKey  = pemBlock("OPENSSH", 41)
)

// pemBlock builds a fake private key block of the given kind.
func pemBlock(kind string, seed uint64) string {
	var b strings.Builder
	b.WriteString("-----BEGIN " + kind + " PRIV" + "ATE KEY-----\n")
	body := fake(seed, b64, 64*12)
	for i := 0; i < len(body); i += 64 {
		b.WriteString(body[i:i+64] + "\n")
	}
	b.WriteString("-----END " + kind + " PRIV" + "ATE KEY-----")
	return b.String()
}

// secretCase is a text holding one secret and what Scan must report for it.
type secretCase struct {
	name, text, rule, value string
}

func secretCases() []secretCase {
	jsonKey := strings.ReplaceAll(privateKey, "\n", `\n`)
	truncatedKey := privateKey[:400]
	return []secretCase{
		{"aws access key", "aws_access_key_id = " + awsKey, "aws-access-key", awsKey},
		{"aws sts key in json", `"AccessKeyId": "` + awsSTSKey + `",`, "aws-access-key", awsSTSKey},
		{"aws secret key", "aws_secret_access_key = " + awsSecret + "\n", "aws-secret-key", awsSecret},
		{"aws secret key in sts json", `"SecretAccessKey": "` + awsSecret + `",`, "aws-secret-key", awsSecret},
		{"aws secret key in env", "AWS_SECRET_ACCESS_KEY=" + awsSecret, "aws-secret-key", awsSecret},
		{"aws session token", `"SessionToken": "` + awsSession + `"`, "aws-session-token", awsSession},
		{"github classic token", "remote: using token " + ghToken + " for push", "github-token", ghToken},
		{"github app token", "GH_TOKEN=" + ghAppToken, "github-token", ghAppToken},
		{"github fine-grained token", "token: " + ghPAT, "github-token", ghPAT},
		{"github token header", "Authorization: token " + ghToken, "github-token", ghToken},
		{"gitlab token", "git clone https://oauth2:" + glToken + "@gitlab.com/g/p.git", "gitlab-token", glToken},
		{"anthropic key", "ANTHROPIC_API_KEY=" + antKey, "anthropic-key", antKey},
		{"openai project key", `client = OpenAI(api_key="` + oaiProject + `")`, "openai-key", oaiProject},
		{"openai legacy key", "export OPENAI_API_KEY=" + oaiLegacy, "openai-key", oaiLegacy},
		{"slack bot token", `"bot_token": "` + slackBot + `"`, "slack-token", slackBot},
		{"slack user token", "SLACK_USER=" + slackUser, "slack-token", slackUser},
		{"slack webhook", "curl -X POST " + slackHook + " -d @msg.json", "slack-webhook", slackHook},
		{"stripe live key", "stripe.api_key = '" + stripeLive + "'", "stripe-key", stripeLive},
		{"stripe restricted test key", "STRIPE=" + stripeTest, "stripe-key", stripeTest},
		{"google api key", `<meta name="maps-key" content="` + googleKey + `">`, "google-api-key", googleKey},
		{"npm token", "//registry.npmjs.org/:_authToken=" + npmToken, "npm-token", npmToken},
		{"pypi token", "password = " + pypiToken, "pypi-token", pypiToken},
		{"huggingface token", "huggingface-cli login --token " + hfToken, "huggingface-token", hfToken},
		{"sendgrid key", "SENDGRID=" + sendgridKey, "sendgrid-key", sendgridKey},
		{"jwt", "set-cookie: session=" + jwtToken + "; Path=/", "jwt", jwtToken},
		{"private key block", "$ cat id_rsa\n" + privateKey + "\n$ ", "private-key", privateKey},
		{"openssh private key", opensshKey, "private-key", opensshKey},
		{"private key in json", `{"private_key": "` + jsonKey + `\n", "type": "service_account"}`, "private-key", jsonKey},
		{"truncated private key", truncatedKey, "private-key", strings.TrimRight(truncatedKey, "\n")},
		{"bearer header", "curl -H 'Authorization: Bearer " + bearerValue + "' https://api", "bearer-token", bearerValue},
		{"bearer in json headers", `{"authorization": "Bearer ` + bearerValue + `"}`, "bearer-token", bearerValue},
		{"bearer without header", "using bearer " + bearerValue, "bearer-token", bearerValue},
		{"basic header", "Authorization: Basic " + basicValue, "basic-auth", basicValue},
		{"curl user", "curl -fsS -u deploy:" + password + " https://ci.local/api", "basic-auth", password},
		{"postgres url", "DATABASE_URL=postgres://app:" + password + "@db.internal:5432/app", "url-credentials", password},
		{"redis url without user", "redis://:" + password + "@cache:6379/0", "url-credentials", password},
		{"env printenv", "HOME=/home/alice\nDATABASE_PASSWORD=" + envValue + "\nPATH=/usr/bin", "env-secret", envValue},
		{"env export quoted", `export SESSION_SECRET="` + envValue + `"`, "env-secret", envValue},
		{"env single quoted", "DB_PASS='" + envValue + "'", "env-secret", envValue},
		{"env before command", "SERVICE_TOKEN=" + envValue + " ./deploy.sh", "env-secret", envValue},
		{"env declare", `declare -x SIGNING_KEY="` + envValue + `"`, "env-secret", envValue},
		{"env in docker inspect", `"Env": ["PATH=/usr/bin", "WEBHOOK_SECRET=` + envValue + `"]`, "env-secret", envValue},
		{"env in a query", "GET /hook?APP_TOKEN=" + envValue + "&x=1", "env-secret", envValue},
		{"generic json", `{"apiKey": "` + genericVal + `"}`, "generic-secret", genericVal},
		{"generic yaml", "client_secret: " + genericVal, "generic-secret", genericVal},
		{"generic go", `authToken := "` + genericVal + `"`, "generic-secret", genericVal},
		{"generic flag", "deploy --password=" + genericVal, "generic-secret", genericVal},
		{"generic escaped json", `"{\"access_token\": \"` + genericVal + `\"}"`, "generic-secret", genericVal},
	}
}

func TestScanFindsSecrets(t *testing.T) {
	for _, tc := range secretCases() {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, m := range Scan(tc.text) {
				v := tc.text[m.Start:m.End]
				if m.Rule == tc.rule && v == tc.value {
					want := Definite
					if tc.rule == "generic-secret" {
						want = Candidate
					}
					if m.Confidence != want {
						t.Errorf("Scan(%q) confidence = %q; want %q", tc.text, m.Confidence, want)
					}
					return
				}
				got = append(got, m.Rule+"="+v)
			}
			t.Errorf("Scan(%q) = %q; want %s=%q", tc.text, got, tc.rule, tc.value)
		})
	}
}

func TestScanIgnoresNonSecrets(t *testing.T) {
	tests := []struct{ name, text string }{
		{"aws documentation key", "aws_access_key_id = AKIAIOSFODNN7EXAMPLE"},
		{"aws documentation secret", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"},
		{"aws key of x", "AKIA" + strings.Repeat("X", 16)},
		{"github token of x", "gh" + "p_" + strings.Repeat("x", 36)},
		{"slack webhook placeholder", "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"},
		{"uuid under a token name", `"token_id": "123e4567-e89b-12d3-a456-426614174000"`},
		{"git hash", "commit 3f786850e387550fdab836ed7e6dc881de23001b\nAuthor: Alice"},
		{"git hash under a token name", `last_token_commit = "3f786850e387550fdab836ed7e6dc881de23001b"`},
		{"sha256 under a secret name", "secret_sha256: " + fake(50, hexLow, 64)},
		{"base64 image", `"tokenIcon": "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="`},
		{"number under a token name", "MAX_TOKEN_LENGTH=4096\nmax_tokens: 8192\nTOKEN_LIMIT=100000000000"},
		{"digits under a key name", "GPG_KEY=12345678"},
		{"go identifiers", "tokenizer := bufio.NewScanner(os.Stdin)\ntoken = tokenizer.NextTokenFromStream()\ntype TokenSource interface{}"},
		{"identifier value", `secretName: "auth-service-token-v2"`},
		{"go test output", "--- PASS: TestParseToken (0.00s)\n--- PASS: TestSecretStore/rotate (0.01s)\nPASS\nok  \texample.com/auth\t0.012s"},
		{"env changeme", "PASSWORD=changeme"},
		{"env variable reference", "API_KEY=${API_KEY}\nGITHUB_TOKEN=$GITHUB_TOKEN\nexport NPM_TOKEN=$(cat ~/.npm-token)"},
		{"your key here", "export OPENAI_API_KEY=your_api_key_here"},
		{"angle placeholder", `api_key: "<your-key>"`},
		{"x placeholder", "SECRET_KEY=xxxxxxxxxxxxxxxx"},
		{"stars", `password: "****************"`},
		{"repeated character", "TOKEN=aaaaaaaaaaaaaaaa"},
		{"short env value", "API_KEY=abc"},
		{"variable expansion", "${SERVICE_TOKEN=defaultvalue123} $SERVICE_TOKEN=abcdefgh123 myTOKEN=abcdefgh123"},
		{"credentials path", "GOOGLE_APPLICATION_CREDENTIALS=/home/alice/.config/gcloud/key.json"},
		{"bearer variable", `curl -H "Authorization: Bearer $TOKEN" https://api`},
		{"bearer angle placeholder", "Authorization: Bearer <token>"},
		{"bearer in prose", "the bearer of this message is the bearer of good news"},
		{"url password variable", "postgres://app:${DB_PASSWORD}@db/app"},
		{"url masked password", "https://user:****@example.com/"},
		{"urls without credentials", "git@github.com:org/repo.git https://github.com/org/repo ssh://git@host:22/x http://localhost:8080/path?next=/a"},
		{"sk- inside words", "disk-usage-report-for-the-whole-cluster-and-more task-0123456789abcdefghijklmnopqrstuv"},
		{"hf_ in an identifier", "- (id)hf_requiredCharacteristicTypesForDisplayMetadata;"},
		{"jwt header only", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9 is a header"},
		{"private key marker without body", `grep -r "-----BEGIN RSA PRIVATE KEY-----" .`},
		{"msg field", "msg.SG.Send(ctx)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Scan(tc.text); len(got) != 0 {
				var vals []string
				for _, m := range got {
					vals = append(vals, m.Rule+"="+tc.text[m.Start:m.End])
				}
				t.Errorf("Scan(%q) = %q; want nothing", tc.text, vals)
			}
		})
	}
}

func TestScanPrefersDefiniteAndLonger(t *testing.T) {
	// The env value is exactly the GitHub token: the specific rule names it.
	text := "GITHUB_TOKEN=" + ghToken
	got := Scan(text)
	if len(got) != 1 || got[0].Rule != "github-token" {
		t.Fatalf("Scan(%q) = %v; want one github-token match", text, got)
	}
	// A generic candidate overlapping a definite match gives way to it.
	text = `"secret": "` + awsKey + `"`
	got = Scan(text)
	if len(got) != 1 || got[0].Rule != "aws-access-key" {
		t.Fatalf("Scan(%q) = %v; want one aws-access-key match", text, got)
	}
}

func TestScanOrdersMatches(t *testing.T) {
	text := "a=" + ghToken + " b=" + awsKey + " c=" + npmToken
	got := Scan(text)
	want := []string{"github-token", "aws-access-key", "npm-token"}
	if len(got) != len(want) {
		t.Fatalf("Scan(%q) = %v; want rules %v", text, got, want)
	}
	for i, m := range got {
		if m.Rule != want[i] || (i > 0 && m.Start < got[i-1].End) {
			t.Errorf("Scan(%q)[%d] = %v; want rule %s after %v", text, i, m, want[i], got[max(i-1, 0)])
		}
	}
}

func TestFirstDefinite(t *testing.T) {
	tests := []struct {
		name, text, rule string
		ok               bool
	}{
		{"clean", "go test ./...\nok  \texample.com/x\t0.1s", "", false},
		{"candidate only", `{"apiKey": "` + genericVal + `"}`, "", false},
		{"first of two", "x " + jwtToken + " y " + ghToken, "jwt", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rule, ok := FirstDefinite(tc.text)
			if rule != tc.rule || ok != tc.ok {
				t.Errorf("FirstDefinite(%q) = %q, %v; want %q, %v", tc.text, rule, ok, tc.rule, tc.ok)
			}
		})
	}
}

func TestSecretFlagReason(t *testing.T) {
	tests := []struct {
		name, text, reason string
		ok                 bool
	}{
		{"clean", "total 8\ndrwxr-xr-x 2 alice staff 64 Jan 2 15:04 src", "", false},
		{"candidate only", "client_secret: " + genericVal, "", false},
		{"one rule", "token " + ghToken, "output contains a secret (github-token)", true},
		{"two rules once each", ghToken + " " + awsKey + " " + ghToken2, "output contains a secret (github-token, aws-access-key)", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reason, ok := SecretFlagReason(tc.text)
			if reason != tc.reason || ok != tc.ok {
				t.Errorf("SecretFlagReason(%q) = %q, %v; want %q, %v", tc.text, reason, ok, tc.reason, tc.ok)
			}
		})
	}
}

func TestIsPlaceholder(t *testing.T) {
	tests := []struct {
		value string
		want  bool
	}{
		{"${API_KEY}", true},
		{"$API_KEY", true},
		{"$(pass show api)", true},
		{"{{ .Token }}", true},
		{"<your-key>", true},
		{"your_api_key_here", true},
		{"xxxxxxxx", true},
		{"XXXX-XXXX-XXXX", true},
		{"AKIAIOSFODNN7EXAMPLE", true},
		{"zzzzzzzzzzzzzzzzz", true},
		{"changeme", true},
		{"********", true},
		{"sk-...abcd", true},
		{"$2b$12$R9h/cIPz0gi.URNNX3kh2O", false},
		{"hunter2hunter2", false},
		{fake(60, alnum, 20), false},
	}
	for _, tc := range tests {
		t.Run(tc.value, func(t *testing.T) {
			if got := isPlaceholder(tc.value); got != tc.want {
				t.Errorf("isPlaceholder(%q) = %v; want %v", tc.value, got, tc.want)
			}
		})
	}
}

// A secret in command output written for a terminal is found as the
// terminal shows it: printed in colour (the code's "1;32m" just before
// it), on a coloured line, or split by a code, the match then running over
// the code so that masking it leaves no part of the secret.
func TestScanReadsTextAsATerminalShowsIt(t *testing.T) {
	const bold, reset = "\x1b[1;32m", "\x1b[0m"
	for _, tc := range secretCases() {
		half := len(tc.value) / 2
		split := tc.value[:half] + reset + tc.value[half:]
		for _, c := range []struct{ how, text, value string }{
			{"in colour", strings.Replace(tc.text, tc.value, bold+tc.value+reset, 1), tc.value},
			{"on a coloured line", bold + tc.text + reset, tc.value},
			{"split by a code", strings.Replace(tc.text, tc.value, split, 1), split},
		} {
			t.Run(tc.name+"/"+c.how, func(t *testing.T) {
				var got []string
				for _, m := range Scan(c.text) {
					if v := c.text[m.Start:m.End]; m.Rule == tc.rule && v == c.value {
						return
					}
					got = append(got, m.Rule+"="+c.text[m.Start:m.End])
				}
				t.Errorf("Scan(%q) = %q; want %s=%q", c.text, got, tc.rule, c.value)
			})
		}
	}
}
