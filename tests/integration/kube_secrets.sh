# kube_secrets.sh: v1 Secrets and ConfigMaps with the real kubectl (1.32
# through the Cloud SDK's dispatcher) against a real `drover up --tls`:
# `kubectl create secret generic` and `create configmap`, a pod that takes
# them through valueFrom.secretKeyRef, configMapKeyRef and envFrom and as
# volumes (files under its task's directory, 0600 for the Secret, found
# through $DROVER_VOLUME_<NAME>), a pod that waits for a missing Secret
# (CreateContainerConfigError) and starts once it is made, apply twice
# (unchanged), immutability, 422 for bad data, another user's view (404),
# the values kept out of drover's logs and `drover describe`, the state
# file 0600, and the objects still there after a restart.
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/kubelib.shlib"

kube_up

out=$(k create secret generic hf --from-literal=token=hf_s3cr3t_Value --from-literal=user=ana 2>&1) ||
	fail "create secret: $out"
expect_eq "create secret" "$out" "secret/hf created"
out=$(k create configmap settings --from-literal=lr=0.001 --from-literal=run_name=exp7 2>&1) ||
	fail "create configmap: $out"
expect_eq "create configmap" "$out" "configmap/settings created"
out=$(k get secrets 2>&1) || fail "get secrets: $out"
echo "$out" | grep -Eq '^hf +Opaque +2 +[0-9]+s' || fail "get secrets table: $out"
out=$(k get cm 2>&1) || fail "get cm: $out"
echo "$out" | grep -Eq '^settings +2 +[0-9]+s' || fail "get configmaps table: $out"
expect_eq "secret data is base64" "$(k get secret hf -o jsonpath='{.data.token}' | base64 -d)" hf_s3cr3t_Value
out=$(k create secret generic hf --from-literal=a=b 2>&1) && fail "a second secret hf was made: $out"
echo "$out" | grep -q 'secrets "hf" already exists' || fail "second create: $out"

cat >"$TEST_TMP/pod.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata:
  name: uses-secret
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: busybox
    command: ["sh", "-c", "echo token=$HF_TOKEN lr=$LR prefixed=$CFG_run_name; echo tok=$(TOK); f=$DROVER_VOLUME_CREDS/token; echo file=$(cat $f) mode=$(stat -c %a $f) dirmode=$(stat -c %a $DROVER_VOLUME_CREDS); echo cfgfile=$(cat $DROVER_VOLUME_CFG/lr.txt)"]
    env:
    - name: HF_TOKEN
      valueFrom:
        secretKeyRef: {name: hf, key: token}
    - name: LR
      valueFrom:
        configMapKeyRef: {name: settings, key: lr}
    - name: TOK
      value: "[$(HF_TOKEN)]"
    - name: MISSING
      valueFrom:
        secretKeyRef: {name: nope, key: x, optional: true}
    envFrom:
    - configMapRef: {name: settings}
      prefix: CFG_
    volumeMounts:
    - name: creds
      mountPath: /etc/creds
      readOnly: true
    - name: cfg
      mountPath: /etc/cfg
  volumes:
  - name: creds
    secret: {secretName: hf}
  - name: cfg
    configMap:
      name: settings
      items: [{key: lr, path: lr.txt}]
YAML
out=$(k apply -f "$TEST_TMP/pod.yaml" 2>&1) || fail "apply: $out"
expect_eq "apply" "$out" "pod/uses-secret created"
echo "$out" | grep -q Warning && fail "apply warned about fields drover acts on: $out"
out=$(k apply -f "$TEST_TMP/pod.yaml" 2>&1) || fail "apply again: $out"
expect_eq "second apply" "$out" "pod/uses-secret unchanged"
wait_until 30 sh -c "$KUBECTL get pod uses-secret -o jsonpath='{.status.phase}' | grep -q Succeeded" ||
	fail "the pod did not succeed: $(k get pod uses-secret -o yaml)"
out=$(k logs uses-secret 2>&1) || fail "logs: $out"
echo "$out" | grep -qx 'token=hf_s3cr3t_Value lr=0.001 prefixed=exp7' || fail "env from the secret and configmap: $out"
# $(VAR) expands in value, and the secret's own value is not expanded again
echo "$out" | grep -qx 'tok=\[hf_s3cr3t_Value\]' || fail "\$(HF_TOKEN) in a later value: $out"
echo "$out" | grep -qx 'file=hf_s3cr3t_Value mode=600 dirmode=700' || fail "secret volume: $out"
echo "$out" | grep -qx 'cfgfile=0.001' || fail "configmap volume with items: $out"
expect_eq "the pod spec reads back valueFrom" \
	"$(k get pod uses-secret -o jsonpath='{.spec.containers[0].env[0].valueFrom.secretKeyRef.name}')" hf
expect_eq "the pod spec reads back volumes" \
	"$(k get pod uses-secret -o jsonpath='{.spec.volumes[0].secret.secretName}')" hf

# drover's own face never shows the value
id=$(k get pod uses-secret -o jsonpath='{.metadata.labels.drover\.dev/job-id}')
out=$("$DROVER" describe job "$id" 2>&1) || fail "describe: $out"
echo "$out" | grep -q 'HF_TOKEN=<secret>' || fail "describe does not show <secret>: $out"
echo "$out" | grep -q 'LR=<configMap settings.lr>' || fail "describe does not name the configmap key: $out"
grep -rq 'hf_s3cr3t_Value' "$TEST_TMP/up.out" && fail "the secret's value is in drover's log"
expect_eq "state database mode" "$(stat -c %a "$TEST_TMP/state/state.db")" 600

# A pod whose Secret is missing waits, and starts once it is made
sed 's/name: uses-secret/name: waits/; s/secretName: hf/secretName: later/' "$TEST_TMP/pod.yaml" >"$TEST_TMP/waits.yaml"
out=$(k apply -f "$TEST_TMP/waits.yaml" 2>&1) || fail "apply waits: $out"
wait_until 10 sh -c "$KUBECTL get pods waits | grep -q CreateContainerConfigError" ||
	fail "the pod does not say what it waits for: $(k get pods waits)"
out=$(k describe pod waits 2>&1)
echo "$out" | grep -q 'secret "later" not found' || fail "describe does not name the missing secret: $out"
wid=$(k get pod waits -o jsonpath='{.metadata.labels.drover\.dev/job-id}')
expect_eq "queue reason code" "$("$DROVER" get jobs "$wid" -o json |
	python3 -c 'import json,sys; d=json.load(sys.stdin); d=d[0] if isinstance(d,list) else d.get("jobs",[d])[0]; print(d["reason_code"])')" CreateContainerConfigError
k create secret generic later --from-literal=token=late >/dev/null || fail "create later"
wait_until 30 sh -c "$KUBECTL get pod waits -o jsonpath='{.status.phase}' | grep -q Succeeded" ||
	fail "the pod did not start once its secret was made: $(k get pod waits -o yaml)"
k logs waits | grep -qx 'file=late mode=600 dirmode=700' || fail "the later secret's file: $(k logs waits)"

# Bad objects: 422 with the field; immutability
out=$(printf '{"apiVersion":"v1","kind":"Secret","metadata":{"name":"bad"},"data":{"k":"not base64!"}}' |
	k create -f - 2>&1) && fail "a secret with data that is not base64 was made: $out"
echo "$out" | grep -q 'data\[k\]' || fail "422 does not name the field: $out"
out=$(printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: frozen}\nimmutable: true\ndata: {a: "1"}\n' |
	k create -f - 2>&1) || fail "create frozen: $out"
out=$(k patch configmap frozen -p '{"data":{"a":"2"}}' 2>&1) && fail "an immutable configmap changed: $out"
echo "$out" | grep -q 'immutable' || fail "patch of an immutable configmap: $out"
out=$(k label configmap frozen team=ml 2>&1) || fail "label an immutable configmap: $out"
out=$(printf '{"apiVersion":"v1","kind":"Secret","metadata":{"name":"strict"},"dta":{}}' |
	k create --validate=strict -f - 2>&1) && fail "strict validation let dta through: $out"
echo "$out" | grep -q 'unknown field "dta"' || fail "strict: $out"

# A wrong token sees nothing
out=$(k --token=wrong-token get secrets 2>&1) && fail "a wrong token listed secrets: $out"
echo "$out" | grep -qi 'unauthorized\|must be logged in' || fail "wrong token: $out"

# apply of a secret twice; delete; they outlive a restart
cat >"$TEST_TMP/sec.yaml" <<'YAML'
apiVersion: v1
kind: Secret
metadata: {name: applied}
stringData: {password: pw1}
YAML
expect_eq "apply secret" "$(k apply -f "$TEST_TMP/sec.yaml" 2>&1)" "secret/applied created"
expect_eq "apply secret again" "$(k apply -f "$TEST_TMP/sec.yaml" 2>&1)" "secret/applied configured"
expect_eq "stringData into data" "$(k get secret applied -o jsonpath='{.data.password}' | base64 -d)" pw1
expect_eq "delete secret" "$(k delete secret later 2>&1)" 'secret "later" deleted'
out=$(k get secret later 2>&1) && fail "a deleted secret is still there: $out"
stop_up
start_up --tls
expect_eq "secret after a restart" "$(k get secret hf -o jsonpath='{.data.user}' | base64 -d)" ana
expect_eq "configmap after a restart" "$(k get cm settings -o jsonpath='{.data.lr}')" 0.001
out=$(k get secret later 2>&1) && fail "the deleted secret came back: $out"
echo "$out" | grep -q NotFound || fail "get of a deleted secret: $out"
