#!/bin/sh
# spec_libfyaml_crashes.sh: two inputs crashed Debian's libfyaml 0.7.12
# inside drover. A tab used as indentation ("? s:<TAB>?"): every reader now
# refuses it first (drv_yaml_guard); `drover validate` exits 2 with
# file:line:col on the colleague's reproducers, a real `drover server`
# answers 400 to such a body on POST /v1/jobs and /v1/apply, alone or in a
# multi-document stream, stays up, and still takes tabs inside values. An
# empty block scalar at the end ("notes: |"), valid YAML, crashed the JSON
# emitter drover used for unknown fields: now taken (201), and read in the
# server's own config file too.
. "$ROOT/tests/integration/lib.sh"


DATA=$ROOT/tests/unit/data
MSG="found a tab in indentation, expected spaces (YAML forbids tabs for indentation)"
cd "$TEST_TMP"

# --- drover validate on the reproducers ---
for f in tab-crash-manifest.yaml:6:10 tab-crash-cluster.yaml:5:10; do
	file=${f%%:*}
	"$DROVER" validate "$DATA/$file" >out.txt 2>err.txt
	expect_eq "validate $file exit" "$?" 2
	expect_eq "validate $file stderr" "$(cat err.txt)" "$DATA/$f: error: $MSG"
done

# --- the server ---
# a config ending in an empty block scalar: refused for what it says (exit 2)
printf 'tokens:\n  - {token: alice-t, user: alice}\ncluster_token: |\n' >empty.yaml
"$DROVER" server --listen "127.0.0.1:$(free_port)" --state "$TEST_TMP/state0" --config empty.yaml \
	>out.txt 2>err.txt
expect_eq "server empty.yaml exit" "$?" 2
grep -q "empty.yaml:3:1: error: cluster_token: found nothing, expected a non-empty string" err.txt || fail "server empty.yaml: $(cat err.txt)"

cat >server.yaml <<'CONF'
tokens:
  - {token: alice-t, user: alice}
cluster_token: agents-t
CONF
chmod 600 server.yaml
SERVER_CONFIG=server.yaml
start_server
URL=$SERVER_URL

# post PATH NAME FILE: POSTs FILE as application/yaml; CODE and body in body.json
post() {
	CODE=$(curl -sS -o body.json -w '%{http_code}' -X POST -H "Authorization: Bearer alice-t" \
		-H "Content-Type: application/yaml" --data-binary "@$3" "$URL$1?filename=$2")
}
detail() {
	python3 -c 'import json; print(json.load(open("body.json"))["error"]["details"][0])'
}
alive() {
	kill -0 "$SERVER_PID" 2>/dev/null || { tail -20 server.log >&2; fail "the server died: $1"; }
	curl -fsS "$URL/healthz" >/dev/null || fail "the server does not answer after $1"
}

post /v1/jobs bad.yaml "$DATA/tab-crash-manifest.yaml"
alive "POST /v1/jobs"
expect_eq "submit status" "$CODE" 400
expect_eq "submit error" "$(detail)" "bad.yaml:6:10: error: $MSG"

post /v1/apply bad.yaml "$DATA/tab-crash-manifest.yaml"
alive "POST /v1/apply"
expect_eq "apply status" "$CODE" 400
expect_eq "apply error" "$(detail)" "bad.yaml:6:10: error: $MSG"

# the smallest crasher, in the second document of a stream: nothing is taken
printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n  containers: [{name: c, image: i}]\n---\n? s:\t?\n' >stream.yaml
post /v1/jobs stream.yaml stream.yaml
alive "a multi-document stream"
expect_eq "stream status" "$CODE" 400
expect_eq "stream error" "$(detail)" "stream.yaml:7:5: error: $MSG"

# tabs inside values are valid YAML and still welcome
printf 'apiVersion: v1\nkind: Pod\nmetadata:\n  name:\ttabbed\nspec:\n  containers:\n  - name: c\n    image: busybox\n    env:\n    - {name: SEP, value: "a\\tb"}\n    args:\n    - |\n      echo one\n      \techo two\n' >good.yaml
post /v1/jobs good.yaml good.yaml
expect_eq "tabbed values status" "$CODE" 201
expect_eq "tabbed values name" "$(python3 -c 'import json; print(json.load(open("body.json"))["name"])')" tabbed

# an unknown field holding an empty block scalar, last: valid, kept as ""
printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: notes}\nspec:\n  containers: [{name: c, image: i}]\nnotes: |\n' >notes.yaml
"$DROVER" validate --json notes.yaml >notes.json 2>/dev/null
expect_eq "validate notes.yaml exit" "$?" 0
expect_eq "notes kept" "$(python3 -c 'import json; print(repr(json.load(open("notes.json"))["ignored"]["notes"]))')" "''"
post /v1/jobs notes.yaml notes.yaml
alive "an empty block scalar at the end"
expect_eq "notes status" "$CODE" 201

# nothing from the refused bodies was kept
n=$(curl -sS -H "Authorization: Bearer alice-t" "$URL/v1/jobs" |
	python3 -c 'import json,sys; b=json.load(sys.stdin); print(len(b.get("items", b) if isinstance(b, dict) else b))')
expect_eq "jobs kept" "$n" 2
alive "the whole test"
echo "ok spec_libfyaml_crashes"
