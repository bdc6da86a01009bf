# tls.sh: https end to end, on GnuTLS. A CA and certificates made with
# `drover tls`; a real `drover server` serving https (config tls:), a real
# agent whose own listener serves https too and which checks the server
# against the CA (DROVER_CA_FILE); a job submitted over https runs and its
# output comes back through the controller, which fetched it from the agent
# over https. Refused, each with a line a person can act on: a client
# trusting another CA, a client trusting only the system's CAs, plain
# http:// to the TLS port, an agent trusting another CA (it never joins);
# the same through the Slurm faces' light binary (drover-slurm).
# Plain HTTP bound beyond loopback is said in a warning by the server and
# the agent. A real Prometheus with the shipped scrape configuration
# (deploy/prometheus) scrapes both over https, the agent found through the
# controller's service discovery (its target's URL is https, and its GPU
# series arrive through that scrape). Last, `drover up --tls` makes its own CA and the client config
# it writes is enough for `drover` commands over https.
. "$ROOT/tests/integration/lib.sh"

TLS=$TEST_TMP/tls
OTHER=$TEST_TMP/other
"$DROVER" tls init "$TLS" --names localhost,127.0.0.1 >/dev/null || fail "drover tls init"
"$DROVER" tls cert "$TLS" agent-a --names 127.0.0.1 >/dev/null || fail "drover tls cert"
"$DROVER" tls init "$OTHER" --names localhost,127.0.0.1 >/dev/null || fail "another CA"
expect_eq "key mode" "$(stat -c %a "$TLS/agent-a-key.pem")" 600

SERVER_SCHEME=https
SERVER_STATE=$TEST_TMP/state-srv
export DROVER_CA_FILE="$TLS/ca.pem"
server_config "allow_root_tasks: true" \
	"tls: {cert_file: $TLS/server.pem, key_file: $TLS/server-key.pem, ca_file: $TLS/ca.pem}"
start_server
grep -q "listening on https://127.0.0.1:$SERVER_PORT" "$TEST_TMP/server.log" ||
	fail "the server does not say https: $(cat "$TEST_TMP/server.log")"
start_agent agent-a 2xH100 --tls-cert "$TLS/agent-a.pem" --tls-key "$TLS/agent-a-key.pem"
expect_eq "agent_url" "$("$DROVER" get node agent-a -o json | jq -r .agent_url)" \
	"https://127.0.0.1:$AGENT_PORT_agent_a"
curl -fsS -m 2 "http://127.0.0.1:$AGENT_PORT_agent_a/healthz" >/dev/null 2>&1 &&
	fail "the agent's listener answered plain http"
curl -fsS -m 2 --cacert "$TLS/ca.pem" "https://127.0.0.1:$AGENT_PORT_agent_a/healthz" >/dev/null ||
	fail "the agent's listener does not answer https"

# a job over https; its output relayed from the agent over https
id=$(printf '#!/bin/sh\necho hello-over-tls\n' | "$DROVER" submit - | sed -n 's/^submitted job \([0-9]*\).*/\1/p')
[ -n "$id" ] || fail "submit over https printed no job id"
wait_until 20 sh -c "\"$DROVER\" get job $id -o json | jq -e '.state == \"succeeded\"'" ||
	fail "job $id did not succeed: $("$DROVER" get job "$id" -o json)"
expect_eq "logs over https" "$("$DROVER" logs "$id")" "hello-over-tls"

# the shipped scrape configuration, pointed here: a real Prometheus scrapes
# the controller over https, and the agent found through the controller's
# service discovery (https too), trusting the cluster's CA
if command -v prometheus >/dev/null; then
	PP=$(free_port)
	(umask 077 && echo "$ADMIN_TOKEN" >"$TEST_TMP/sd-token")
	sed -e "s|/etc/prometheus/drover-ca.pem|$TLS/ca.pem|g" \
		-e "s|/etc/prometheus/drover-sd-token|$TEST_TMP/sd-token|" \
		-e "s|scrape_interval: 15s|scrape_interval: 1s|" -e "s|refresh_interval: 30s|refresh_interval: 1s|" \
		-e "s|controller:8080|127.0.0.1:$SERVER_PORT|g" \
		"$ROOT/deploy/prometheus/prometheus.yml" >"$TEST_TMP/prometheus.yml"
	cp "$ROOT/deploy/prometheus/drover-rules.yml" "$TEST_TMP/"
	grep -q "$TLS/ca.pem" "$TEST_TMP/prometheus.yml" || fail "the scrape config changed shape"
	prometheus --config.file="$TEST_TMP/prometheus.yml" --storage.tsdb.path="$TEST_TMP/prom" \
		--web.listen-address="127.0.0.1:$PP" >"$TEST_TMP/prometheus.log" 2>&1 &
	track $!
	up() { [ "$(curl -fsS --get "http://127.0.0.1:$PP/api/v1/query" --data-urlencode "query=up{job=\"$1\"}" |
		jq -r '.data.result[0].value[1]')" = 1 ]; }
	wait_until 60 up drover-server || fail "Prometheus did not scrape the controller over https: $(tail -5 "$TEST_TMP/prometheus.log")"
	wait_until 20 up drover-agents || fail "Prometheus did not scrape the agent over https: $(tail -5 "$TEST_TMP/prometheus.log")"
	# the agent's target came from the discovery with __scheme__ https, and
	# its series were ingested through that TLS scrape
	curl -fsS "http://127.0.0.1:$PP/api/v1/targets?state=active" >"$TEST_TMP/targets.json" ||
		fail "Prometheus targets"
	expect_eq "the agents' scrape URLs" \
		"$(jq -r '[.data.activeTargets[] | select(.labels.job == "drover-agents") | "\(.scrapeUrl) \(.health)"] | join(",")' "$TEST_TMP/targets.json")" \
		"https://127.0.0.1:$AGENT_PORT_agent_a/metrics up"
	wait_until 20 sh -c "curl -fsS --get 'http://127.0.0.1:$PP/api/v1/query' --data-urlencode \
		'query=count(DCGM_FI_DEV_GPU_UTIL{job=\"drover-agents\",Hostname=\"agent-a\"}) == 2' |
		jq -e '.data.result | length == 1'" >/dev/null ||
		fail "no GPU series of agent-a ingested over https"
fi

# refusals, in words
out=$(DROVER_CA_FILE="$OTHER/ca.pem" "$DROVER" queue 2>&1) && fail "another CA was accepted"
case $out in *"certificate is not trusted by the CA in $OTHER/ca.pem"*) ;;
*) fail "another CA: $out" ;; esac
out=$(env -u DROVER_CA_FILE "$DROVER" queue 2>&1) && fail "the system's CAs were enough"
case $out in *"not trusted by the system's CAs"*"--tls-ca FILE"*) ;;
*) fail "no CA: $out" ;; esac
out=$("$DROVER" queue --server "http://127.0.0.1:$SERVER_PORT" 2>&1) && fail "plain http to the TLS port answered"
case $out in *"if it serves TLS, use an https:// URL"*) ;;
*) fail "http to https: $out" ;; esac
"$DROVER" queue --tls-ca "$TLS/ca.pem" >/dev/null || fail "--tls-ca was not used"
# the Slurm faces' light binary: https through the libcurl it loads then
# (src/lite/curl_dl.c), plain http through its own client, with the same
# checks and words
faces=$(dirname "$DROVER")/drover-slurm
if [ -x "$faces" ]; then
	id=$("$faces" sbatch --parsable -o /dev/null --wrap true) || fail "drover-slurm sbatch over https"
	"$faces" squeue -h -j "$id" -o %i >/dev/null || fail "drover-slurm squeue over https"
	out=$(DROVER_CA_FILE="$OTHER/ca.pem" "$faces" squeue 2>&1) && fail "drover-slurm: another CA was accepted"
	case $out in *"certificate is not trusted by the CA in $OTHER/ca.pem"*) ;;
	*) fail "drover-slurm, another CA: $out" ;; esac
	out=$("$faces" squeue --server "http://127.0.0.1:$SERVER_PORT" 2>&1) &&
		fail "drover-slurm: plain http to the TLS port answered"
	case $out in *"if it serves TLS, use an https:// URL"*) ;;
	*) fail "drover-slurm, http to https: $out" ;; esac
fi

# an agent that trusts another CA never joins, and says why; its plain
# listener on every interface is said in a warning
port=$(free_port)
DROVER_CA_FILE="$OTHER/ca.pem" "$DROVER" agent --server "$SERVER_URL" --token-file "$CLUSTER_TOKEN_FILE" \
	--name agent-x --listen "0.0.0.0:$port" --fake-gpus 1xH100 --run-as-self \
	--state "$TEST_TMP/agent-x" >"$TEST_TMP/agent-x.log" 2>&1 &
track $!
wait_until 15 grep -q "not trusted by the CA in $OTHER/ca.pem" "$TEST_TMP/agent-x.log" ||
	fail "agent-x: $(cat "$TEST_TMP/agent-x.log")"
grep -q "warning: plain HTTP on 0.0.0.0:$port, which is not loopback" "$TEST_TMP/agent-x.log" ||
	fail "agent-x did not warn about plain HTTP: $(cat "$TEST_TMP/agent-x.log")"
"$DROVER" get node agent-x >/dev/null 2>&1 && fail "agent-x joined with an untrusted server"

# a plain-HTTP controller bound beyond loopback says so
port=$(free_port)
"$DROVER" server --listen "0.0.0.0:$port" --state "$TEST_TMP/state-plain" >"$TEST_TMP/plain.log" 2>&1 &
track $!
wait_until 15 grep -q "warning: plain HTTP on 0.0.0.0:$port, which is not loopback" "$TEST_TMP/plain.log" ||
	fail "no plain-HTTP warning: $(cat "$TEST_TMP/plain.log")"
grep -q "warning: plain HTTP" "$TEST_TMP/server.log" && fail "the TLS server warned about plain HTTP"
stop_server

# drover up --tls: its own CA, a client config naming it
unset DROVER_SERVER DROVER_TOKEN DROVER_CA_FILE
SERVER_PORT=$(free_port)
export DROVER_CA_FILE="$TEST_TMP/state/tls/ca.pem"   # for the lib's /healthz probe
start_up --tls
unset DROVER_CA_FILE
grep -q "^drover is up: https://127.0.0.1:$SERVER_PORT" "$TEST_TMP/up.out" || fail "up --tls: $(cat "$TEST_TMP/up.out")"
grep -q "^ca_file: $TEST_TMP/state/tls/ca.pem" "$XDG_CONFIG_HOME/drover/config" ||
	fail "client config: $(cat "$XDG_CONFIG_HOME/drover/config")"
expect_eq "up key mode" "$(stat -c %a "$TEST_TMP/state/tls/server-key.pem")" 600
id=$(printf '#!/bin/sh\necho up-tls\n' | "$DROVER" submit - | sed -n 's/^submitted job \([0-9]*\).*/\1/p')
wait_until 20 sh -c "\"$DROVER\" get job $id -o json | jq -e '.state == \"succeeded\"'" ||
	fail "up --tls: job $id did not succeed"
expect_eq "up --tls logs" "$("$DROVER" logs "$id")" "up-tls"
stop_up
