# slurm_output.sh: a batch script runs as under Slurm and writes Slurm's
# output files (docs/slurm.md, "Output files"), driven as a tool drives
# Slurm: submitted with `sbatch --parsable`, polled with `sacct -P -X -n -o
# JobID,State,ExitCode -j ID` and `squeue -h -j ID -o %T`, then the files
# read:
#   - -o/-e with patterns (%x %j %N %u %%), stdout and a 2-node srun's
#     labelled output in one file, stderr in the other, created with the
#     submitter's umask (027 here: mode 0640), in the submit directory,
#     where the script runs; SLURM_SUBMIT_DIR and SLURM_SUBMIT_HOST;
#   - the default slurm-%j.out in a relative -D directory (the job runs
#     there, SLURM_SUBMIT_DIR stays where sbatch ran), slurm-%A_%a.out for
#     array elements, --open-mode=append keeps what was there and the
#     default truncates; drover logs reads the file;
#   - an output file that cannot be created fails the job, saying which;
#   - the output cap (task_output_max_bytes) does not apply to the job's
#     own files (docs/agent.md).
. "$ROOT/tests/integration/lib.sh"

bin=$TEST_TMP/slurm-bin
mkdir -p "$bin"
for n in sbatch squeue sacct srun; do ln -s "$DROVER" "$bin/$n"; done
PATH=$bin:$PATH
export PATH
server_config "task_output_max_bytes: 4096"
start_server
start_agent gpu-01 2xH100
start_agent gpu-02 2xH100
sub=$TEST_TMP/sub
mkdir -p "$sub/wd"
cd "$sub" || fail "cd $sub"

acct() { sacct -P -X -n -o JobID,State,ExitCode -j "$1"; }
ended() { case $(acct "$1") in *\|COMPLETED\|*|*\|FAILED\|*|*\|CANCELLED*) return 0 ;; esac; return 1; }
finish() {   # finish ID WANT: polled as tools poll, until sacct says WANT
	wait_until 30 ended "$1" || fail "job $1 did not end: '$(acct "$1")'"
	expect_eq "sacct of job $1" "$(acct "$1")" "$1|$2"
	expect_eq "squeue %T of job $1" "$(squeue -h -j "$1" -o %T)" "${2%%|*}"
}

# ---- -o/-e patterns, a 2-node srun, the umask, the submit directory
cat >job.sh <<'EOF'
#!/bin/sh
#SBATCH -J outjob
#SBATCH -N 2
#SBATCH -o out-%x-%j-%N-%u-100%%.log
#SBATCH -e err-%j.log
echo "pwd=$(pwd) dir=$SLURM_SUBMIT_DIR host=$SLURM_SUBMIT_HOST"
srun -l sh -c 'echo "$SLURM_PROCID $SLURMD_NODENAME"' | sort
echo oops >&2
EOF
id=$(umask 027 && sbatch --parsable job.sh) || fail "sbatch --parsable job.sh"
finish "$id" "COMPLETED|0:0"
f="out-outjob-$id-gpu-01-ops-100%.log"
[ -f "$f" ] || fail "no $f in the submit directory: $(ls)"
expect_eq "the batch step's output" "$(cat "$f")" "pwd=$sub dir=$sub host=$(hostname)
0: 0 gpu-01
1: 1 gpu-02"
expect_eq "the error file" "$(cat "err-$id.log")" oops
expect_eq "made with the submitter's umask 027" "$(stat -c %a "$f") $(stat -c %a "err-$id.log")" \
	"640 640"
expect_eq "drover logs reads the output file" "$("$DROVER" logs "$id" | head -1)" \
	"pwd=$sub dir=$sub host=$(hostname)"

# ---- the default name, in a relative --chdir; --open-mode
printf 'old line\n' >"wd/slurm-$((id + 1)).out"
id2=$(sbatch --parsable -D wd --wrap 'echo "pwd=$(pwd) dir=$SLURM_SUBMIT_DIR"; echo to-stderr >&2')
expect_eq "next id" "$id2" "$((id + 1))"
finish "$id2" "COMPLETED|0:0"
expect_eq "slurm-%j.out in --chdir, truncated, stdout and stderr" "$(cat "wd/slurm-$id2.out")" \
	"pwd=$sub/wd dir=$sub
to-stderr"
printf 'kept\n' >keep.out
id3=$(sbatch --parsable -o keep.out --open-mode=append --wrap 'echo appended')
finish "$id3" "COMPLETED|0:0"
expect_eq "--open-mode=append" "$(cat keep.out)" "kept
appended"

# ---- array elements: slurm-%A_%a.out
arr=$(sbatch --parsable --array=1-2 --wrap 'echo "task $SLURM_ARRAY_TASK_ID"')
for k in 1 2; do
	finish "${arr}_$k" "COMPLETED|0:0"
	expect_eq "slurm-${arr}_$k.out" "$(cat "slurm-${arr}_$k.out")" "task $k"
done
[ ! -e "slurm-$arr.out" ] || fail "the array's parent wrote slurm-$arr.out"

# ---- a file that cannot be made fails the job, saying which
id4=$(sbatch --parsable -o nodir/x-%j.out --wrap 'echo never')
wait_until 30 ended "$id4" || fail "job $id4 did not end: '$(acct "$id4")'"
case $(acct "$id4") in "$id4|FAILED|"*) ;; *) fail "job $id4 with no output directory: $(acct "$id4")" ;; esac
case $("$DROVER" get job "$id4" -o json | jq -r .reason) in
*"nodir/x-$id4.out"*) ;;
*) fail "job $id4's reason: $("$DROVER" get job "$id4" -o json | jq -r .reason)" ;;
esac
# ---- the job's own file is never capped (the cap is 4096 bytes here)
id5=$(sbatch --parsable -o big-%j.out --wrap 'head -c 20000 /dev/zero | tr "\\0" x; echo')
finish "$id5" "COMPLETED|0:0"
expect_eq "an -o file past the output cap" "$(wc -c <"big-$id5.out")" 20001
grep -q 'output capped' "big-$id5.out" && fail "the -o file got the cap's mark"
echo "output files: patterns, umask, -D, open modes, arrays, and a failure, as Slurm's"
