# container_registry_auth.sh: registry credentials from the file the
# operator names (--registry-auth-file, podman's auth.json), with real parts:
# a docker-registry on loopback with htpasswd (bcrypt) auth, holding an image
# built here from busybox-static; podman and runc; a store of the test's own.
#   - without the file a pull fails at once: ErrImagePull: unauthorized
#   - with it the Pod runs in its image
#   - a file that group or others may read is refused at start (exit 2)
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/cp_common.shlib"

. "$ROOT/tests/integration/podman.shlib"
podman_setup docker-registry

busybox_rootfs sh echo
rootfs_import localhost/private:1 --change 'CMD ["/bin/echo", "ran from the private registry"]'

# --- a registry that wants a password ------------------------------------------
REG_PORT=$(free_port)
hash=$(python3 -W ignore -c 'import crypt; print(crypt.crypt("s3cret", crypt.mksalt(crypt.METHOD_BLOWFISH)))') ||
	fail "cannot make a bcrypt hash"
echo "trainer:$hash" >"$TEST_TMP/htpasswd"
cat >"$TEST_TMP/registry.yml" <<EOF2
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $TEST_TMP/registry
http:
  addr: 127.0.0.1:$REG_PORT
auth:
  htpasswd:
    realm: drover-test
    path: $TEST_TMP/htpasswd
EOF2
docker-registry serve "$TEST_TMP/registry.yml" >"$TEST_TMP/registry.log" 2>&1 &
track $!
wait_until 20 sh -c "curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$REG_PORT/v2/ | grep -q 401" ||
	{ cat "$TEST_TMP/registry.log" >&2; fail "docker-registry did not start with auth"; }
AUTH="$TEST_TMP/auth.json"
printf '{"auths": {"127.0.0.1:%s": {"auth": "%s"}}}\n' "$REG_PORT" "$(printf trainer:s3cret | base64)" >"$AUTH"
chmod 600 "$AUTH"
podman_t push --authfile "$AUTH" --tls-verify=false localhost/private:1 \
	"docker://127.0.0.1:$REG_PORT/team/private:1" >"$TEST_TMP/push.log" 2>&1 ||
	{ cat "$TEST_TMP/push.log" >&2; fail "podman push failed"; }
podman_t rmi localhost/private:1 >/dev/null 2>&1
cat >"$TEST_TMP/registries.conf" <<EOF2
[[registry]]
location = "127.0.0.1:$REG_PORT"
insecure = true
EOF2
cat >"$TEST_TMP/pod.yaml" <<EOF2
apiVersion: v1
kind: Pod
metadata: {name: private}
spec:
  containers:
  - name: main
    image: 127.0.0.1:$REG_PORT/team/private:1
EOF2

cp_setup
start_server
ARGS="--runtime podman --podman-root $P --podman-storage-driver vfs --registries-conf $TEST_TMP/registries.conf"

# --- no credentials: unauthorized, at once ----------------------------------------
# shellcheck disable=SC2086
start_agent auth-node 1xH100 $ARGS
id=$(submit "$TEST_TMP/pod.yaml")
wait_job "$id" failed 30
reason=$(jf "$id" 'j["reason"]')
case "$reason" in
*"ErrImagePull: unauthorized: 127.0.0.1:$REG_PORT/team/private:1: "*"--registry-auth-file"*) ;;
*) fail "no credentials: reason '$reason'" ;;
esac
expect_eq "pulls without credentials" "$(grep -c "drover: pulling" "$TEST_TMP/agent-auth-node/tasks/$id.0/$id.0.err")" 1
stop_agent auth-node

# --- a lax credentials file is refused -----------------------------------------------
chmod 644 "$AUTH"
# shellcheck disable=SC2086
"$DROVER" agent --server "$SERVER_URL" --token-file "$CLUSTER_TOKEN_FILE" --name lax-node \
	--fake-gpus 1xH100 --run-as-self --state "$TEST_TMP/agent-lax" $ARGS \
	--registry-auth-file "$AUTH" >"$TEST_TMP/lax.out" 2>&1
expect_eq "exit with a lax auth file" "$?" 2
grep -q -- "--registry-auth-file $AUTH: a file of mode 0644: it holds registry credentials" "$TEST_TMP/lax.out" ||
	{ cat "$TEST_TMP/lax.out" >&2; fail "the lax auth file's refusal does not say why"; }
chmod 600 "$AUTH"

# --- with the credentials file: it runs ---------------------------------------------
# shellcheck disable=SC2086
start_agent auth-node 1xH100 $ARGS --registry-auth-file "$AUTH"
id=$(submit "$TEST_TMP/pod.yaml")
wait_job "$id" succeeded 60
"$DROVER" logs "$id" | grep -q "^ran from the private registry$" || fail "the Pod did not run its image's CMD"
"$DROVER" describe job "$id" | grep -q "^    image:   pulled (attempt 1 of 3, imagePullPolicy IfNotPresent)$" ||
	fail "describe does not say the image was pulled"
grep -q "authfile" "$TEST_TMP/agent-auth-node/tasks/$id.0/$id.0.script" || fail "the script does not pass --authfile"
echo "ok: registry credentials from --registry-auth-file; none: unauthorized at once; a lax file refused"
