/*
 * slurm_int.h: what the Slurm faces (sbatch, squeue, sacct, scancel, sinfo,
 * scontrol; src/client/slurm_*.c) share: Slurm's words for drover's job and
 * node states (CONTRACTS.md section 1), Slurm's time formats, job ids as
 * Slurm writes them, reading every page of a job list, and the field
 * formats (%i, JobID, ...) turned into columns. docs/slurm.md is the
 * user's page; these faces talk to the server only over docs/api.md.
 */
#ifndef DROVER_SLURM_INT_H
#define DROVER_SLURM_INT_H

#include "client_int.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Connects as the face called `name` (errors read "name: error: ..."):
 * 0, or the exit code (1, as Slurm's commands exit on any failure). */
int sl_connect(struct cli *cli, const char *name);

/* The exit code of a Slurm command for a drover one: Slurm's exit 1 for
 * any failure, bad usage included. */
int sl_exit(int drover_code);

/* Prints "NAME: warning: " and the message (sbatch's warnings). */
void sl_warn(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* drover's state (the "state" key) as squeue's %t and %T, and as sacct's
 * State; completing: the job is final but its tasks are not all gone. */
const char *sl_state_code(const char *state, bool completing);
const char *sl_state_name(const char *state, bool completing);
/* sacct's State: CANCELLED by UID, RUNNING for scheduled. Into buf. */
const char *sl_sacct_state(const json_t *job, char *buf, size_t n);
/* A Slurm state word or code ("PD", "pending", "R", "COMPLETED", "CA")
 * as drover's state; NULL when it is none. "S"/"SUSPENDED" match no drover state:
 * *never is set true (the filter then matches nothing). */
const char *sl_state_parse(const char *word, bool *never);
/* Splits buf at commas in place: at most max words into list; their count. */
int sl_split(char *buf, const char **list, int max);
/* The job id of array task `task` of the array parent job (GET /v1/jobs/P's
 * object: elements.first, count, array); 0 when it has none. */
unsigned long long sl_array_element(const json_t *parent, long long task);

/* A job's state for the faces, and whether it is completing. */
bool sl_job_completing(const json_t *job);

/* Slurm's durations: squeue's TIME ("0:05", "1:02:03", "1-00:00:00"),
 * sacct's Elapsed and scontrol's RunTime ("00:00:05", "1-00:00:00"), and a
 * time limit (UNLIMITED when absent; hms picks the second form). */
void sl_secs_short(int64_t secs, char *buf, size_t n);
void sl_secs_hms(int64_t secs, char *buf, size_t n);
void sl_limit(const json_t *job, bool hms, char *buf, size_t n);
/* An absolute time as Slurm prints it (local time, "2026-12-01T21:40:00");
 * "N/A" or "Unknown" (unknown_word) for 0. */
void sl_time(int64_t t, const char *unknown_word, char *buf, size_t n);
/* Parses Slurm's time specs for -S/-E and --begin: "now", "now-1hour",
 * "YYYY-MM-DD[THH:MM[:SS]]", "HH:MM[:SS]" (today), "MMDDYY". -1 when bad. */
int64_t sl_parse_when(const char *s, int64_t now);

/* A pending job's reason as squeue's %R and scontrol's Reason= show it:
 * its reason_code, and for ReqNodeNotAvail Slurm's ", UnavailableNodes:LIST"
 * (compressed) from the reason text, which starts with it (src/core/reason.c). */
const char *sl_job_reason(const json_t *job, char *buf, size_t n);
/* A job's id as Slurm writes it: "42", or "7_3" for element 3 of array 7. */
const char *sl_job_id(const json_t *job, char *buf, size_t n);
/* The node list of a job, hostlist-compressed ("gpu-[01-02]"); "" when none. */
const char *sl_job_nodelist(const json_t *job, char *buf, size_t n);
/* The number of a uid for a user name (getpwnam), else 0 ("by 0"). */
long sl_uid_of(const char *user);

/*
 * Every item of GET path (a query may be in it), following "next_after"
 * to the last page: fn once per job, in the server's order; fn returning
 * nonzero stops. Returns 0, or the exit code after printing the error.
 */
int sl_each_job(struct cli *cli, const char *path, int (*fn)(const json_t *job, void *cls),
		void *cls);

/* The cluster (GET /v1/cluster), a new reference in *out; 0 or the exit
 * code. */
int sl_cluster(struct cli *cli, json_t **out);

/* ---- column formats ---- */

/* One column: the field it prints, its width (0: as wide as the value,
 * negative: right-aligned), and the text before it. */
struct sl_col {
	const char *field;   /* canonical field name, e.g. "jobid", "state" */
	int width;
	bool right;
	char prefix[64];     /* literal text before the field */
};

struct sl_fmt {
	struct sl_col cols[64];
	int ncols;
	char suffix[64];     /* literal text after the last field */
};

/*
 * A printf-like %-format ("%.18i %.9P %j") against a table of letters:
 * each %[.][-]W<letter> becomes a column; "." means right-aligned... as
 * Slurm reads it: a width with "." truncates and right-justifies, "-"
 * left-justifies. letters: "i=jobid,j=name,...". Returns 0, or -1 with the
 * offending text in err.
 */
struct sl_letter {
	char letter;
	const char *field;
	const char *header;
};
int sl_fmt_percent(const char *spec, const struct sl_letter *letters, struct sl_fmt *out,
		   char *err, size_t errsz);
/* A name list ("JobID,State%20,ExitCode"; sacct -o, squeue -O "name:width")
 * against a table of names (case-insensitive): columns with their default
 * widths, or the one given. */
struct sl_name {
	const char *name;    /* "JobID" (sacct) or "jobid" (squeue -O) */
	const char *field;
	const char *header;
	int width;           /* default width; negative: right-aligned */
};
int sl_fmt_names(const char *spec, const struct sl_name *names, char sep, struct sl_fmt *out,
		 char *err, size_t errsz);

/* Prints one cell padded (or cut) to the column's width. */
void sl_cell(FILE *f, const struct sl_col *c, const char *value, bool cut);

#endif
