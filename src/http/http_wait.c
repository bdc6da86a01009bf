/*
 * http_wait.c: the waiter thread of the HTTP server: where requests wait
 * without holding an event thread (include/drover/http.h, "Deferred
 * replies").
 *
 * A handler that cannot answer yet defers; a stream with nothing to send
 * returns 0. Either way the event thread suspends the connection
 * (libmicrohttpd's suspend/resume) and parks the request here, then goes
 * on serving other connections. One waiter thread holds every parked
 * request. It sleeps in epoll on an eventfd (drv_http_wake) and on each
 * parked socket's hang-up, with a timeout at the nearest deadline. When it
 * wakes it calls the deferred functions (all of them after a wake, only the
 * newly parked ones otherwise), resumes the connections whose reply is
 * ready, whose stream may have more, whose deadline passed or whose peer
 * went away; libmicrohttpd then calls the access callback or the stream
 * reader again on an event thread, which sends the reply. Deadlines are
 * served on a grid (DRV_HTTP_DEADLINE_ROUND_MS, include/drover/http.h):
 * each resume costs the event thread a walk over its suspended
 * connections, so those due together go in one round.
 *
 * Parking goes through a small locked list (incoming) that the waiter
 * thread takes whole; its own list is touched by no one else, so a
 * deferred function runs with no lock of this layer held and may take the
 * caller's locks. drv_http_wake() takes no lock at all, so it may be
 * called under any of them.
 */
#include "http_int.h"

#include "drover/clock.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

void drv_http_wake(struct drv_http_server *s)
{
	uint64_t one = 1;

	if (!s || !s->waiter_started)
		return;
	atomic_fetch_add(&s->wake_gen, 1);
	if (!atomic_exchange(&s->wake_pending, true))
		(void)!write(s->evfd, &one, sizeof(one));
}

#define MAX_KEYS 4096   /* woken keys kept between scans; past that, all */

void drv_http_wake_key(struct drv_http_server *s, uint64_t key)
{
	uint64_t one = 1;

	if (!s || !s->waiter_started)
		return;
	/* inmu is a leaf lock, never held while calling out. The count moves
	 * with the key, under it: a scan that takes the keys sees the count
	 * of the same wakes (take_woken), so a request parked meanwhile is
	 * looked at either by its key or by the count. */
	pthread_mutex_lock(&s->inmu);
	atomic_fetch_add(&s->key_gen, 1);
	if (s->nkeys >= MAX_KEYS) {
		s->keys_overflow = true;
	} else if (!s->nkeys || s->keys[s->nkeys - 1] != key) {
		DRV_GROW(s->keys, s->nkeys + 1, s->kcap);
		s->keys[s->nkeys++] = key;
	}
	pthread_mutex_unlock(&s->inmu);
	if (!atomic_exchange(&s->wake_pending, true))
		(void)!write(s->evfd, &one, sizeof(one));
}

/* The request whose deferred fn runs on this thread now (drv_http_wait_on). */
static __thread struct drv_http_req *evaluating;

void drv_http_wait_on(uint64_t key)
{
	if (evaluating)
		evaluating->key = key;
}

/* Pokes the waiter thread without marking a wake: it adopts new parkers
 * and looks at its timeouts again. */
void http_wait_poke(struct drv_http_server *s)
{
	uint64_t one = 1;

	(void)!write(s->evfd, &one, sizeof(one));
}

bool http_park(struct drv_http_req *r, enum park_kind kind)
{
	struct drv_http_server *s = r->srv;
	const union MHD_ConnectionInfo *ci;
	bool poke_now;

	pthread_mutex_lock(&s->inmu);
	if (s->closed) {
		pthread_mutex_unlock(&s->inmu);
		return false;
	}
	ci = MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	r->sock = ci ? ci->connect_fd : -1;
	r->kind = kind;
	r->gone = false;
	MHD_suspend_connection(r->conn);
	r->next = s->incoming;
	s->incoming = r;
	/* The waiter thread adopts r on its next wake. Poke it now only if
	 * that could be too late: r's deadline comes before the one it sleeps
	 * to, or a wake came since r was last looked at (the waiter may have
	 * scanned without r). Not poking saves a thread switch per submit. */
	poke_now = r->deadline_ms < atomic_load(&s->sleeps_to) ||
		   atomic_load(&s->wake_gen) != r->gen || atomic_load(&s->key_gen) != r->kgen;
	r->fresh = true;
	pthread_mutex_unlock(&s->inmu);
	if (poke_now)
		http_wait_poke(s);
	return true;
}

bool http_defer_try(struct drv_http_req *r, bool timed_out)
{
	int rc;

	r->key = 0;
	r->gen = atomic_load(&r->srv->wake_gen);
	r->kgen = atomic_load(&r->srv->key_gen);
	evaluating = r;
	rc = r->dfn(r->dcls, &r->dresp, timed_out);
	evaluating = NULL;

	if (rc != 0 && timed_out) {
		drv_http_resp_error(&r->dresp, 500, "internal", NULL,
				    "%s %s: no reply by its deadline", r->method, r->path);
		rc = 0;
	}
	if (rc == 0)
		r->answered = true;
	return rc == 0;
}

/*
 * The waiter thread's index over what it holds. A scan used to walk every
 * parked request: with an agent's sync parked per node, and a scan after
 * each park, wake and deadline, that was O(agents) a heartbeat, O(agents^2)
 * a second. Now a scan lists only the requests something concerns: those
 * adopted since the last one, those whose peer hung up, the unkeyed ones
 * after a drv_http_wake(), those filed under a woken key, and those whose
 * deadline passed (a heap); each is looked at once (its visit stamp).
 */
#define WAIT_BUCKET_BITS 14

static struct drv_http_req **bucket_of(struct drv_http_server *s, uint64_t key)
{
	return &s->kbuckets[(key * 0x9e3779b97f4a7c15ull) >> (64 - WAIT_BUCKET_BITS)];
}

/* Files r under its key (r->key), or with the unkeyed. */
static void key_link(struct drv_http_server *s, struct drv_http_req *r)
{
	struct drv_http_req **head = r->key ? bucket_of(s, r->key) : &s->unkeyed;

	r->kindexed = r->key;
	r->knext = *head;
	if (*head)
		(*head)->kprev = &r->knext;
	*head = r;
	r->kprev = head;
}

static void key_unlink(struct drv_http_req *r)
{
	if (!r->kprev)
		return;
	*r->kprev = r->knext;
	if (r->knext)
		r->knext->kprev = r->kprev;
	r->kprev = NULL;
	r->knext = NULL;
}

static void heap_set(struct drv_http_server *s, size_t i, struct drv_http_req *r)
{
	s->heap[i] = r;
	r->heap_i = i + 1;
}

static void heap_up(struct drv_http_server *s, size_t i)
{
	struct drv_http_req *r = s->heap[i];

	while (i > 0 && s->heap[(i - 1) / 2]->deadline_ms > r->deadline_ms) {
		heap_set(s, i, s->heap[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	heap_set(s, i, r);
}

static void heap_down(struct drv_http_server *s, size_t i)
{
	struct drv_http_req *r = s->heap[i];

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= s->nheap)
			break;
		if (c + 1 < s->nheap && s->heap[c + 1]->deadline_ms < s->heap[c]->deadline_ms)
			c++;
		if (s->heap[c]->deadline_ms >= r->deadline_ms)
			break;
		heap_set(s, i, s->heap[c]);
		i = c;
	}
	heap_set(s, i, r);
}

static void heap_del(struct drv_http_server *s, struct drv_http_req *r)
{
	size_t i = r->heap_i - 1;
	struct drv_http_req *last = s->heap[--s->nheap];

	r->heap_i = 0;
	if (i == s->nheap)
		return;
	heap_set(s, i, last);
	heap_down(s, i);
	heap_up(s, last->heap_i - 1);
}

static void parked_add(struct drv_http_server *s, struct drv_http_req *r)
{
	r->pnext = s->parked;
	if (s->parked)
		s->parked->pprev = &r->pnext;
	s->parked = r;
	r->pprev = &s->parked;
	s->nparked++;
	key_link(s, r);
	r->heap_i = 0;
	if (r->deadline_ms != INT64_MAX) {
		DRV_GROW(s->heap, s->nheap + 1, s->heapcap);
		heap_set(s, s->nheap++, r);
		heap_up(s, s->nheap - 1);
	}
}

static void parked_del(struct drv_http_server *s, struct drv_http_req *r)
{
	*r->pprev = r->pnext;
	if (r->pnext)
		r->pnext->pprev = r->pprev;
	r->pprev = NULL;
	r->pnext = NULL;
	s->nparked--;
	key_unlink(r);
	if (r->heap_i)
		heap_del(s, r);
}

/* Lists r for the next scan, once. */
static void visit(struct drv_http_server *s, struct drv_http_req *r)
{
	if (r->visit == s->visits)
		return;
	r->visit = s->visits;
	DRV_GROW(s->visit_v, s->nvisit + 1, s->visitcap);
	s->visit_v[s->nvisit++] = r;
}

/* Lists every request in the heap below i whose deadline is due. */
static void visit_due(struct drv_http_server *s, size_t i, int64_t now)
{
	if (i >= s->nheap || s->heap[i]->deadline_ms > now)
		return;
	visit(s, s->heap[i]);
	visit_due(s, 2 * i + 1, now);
	visit_due(s, 2 * i + 2, now);
}

/* Takes the incoming list; watches each new socket for a hang-up. */
static void adopt(struct drv_http_server *s)
{
	struct drv_http_req *in, *next;

	pthread_mutex_lock(&s->inmu);
	in = s->incoming;
	s->incoming = NULL;
	pthread_mutex_unlock(&s->inmu);
	for (; in; in = next) {
		struct epoll_event ev = { .events = EPOLLRDHUP, .data.ptr = in };

		next = in->next;
		in->next = NULL;
		if (in->sock >= 0 && epoll_ctl(s->epfd, EPOLL_CTL_ADD, in->sock, &ev) < 0)
			in->sock = -1;
		parked_add(s, in);
		visit(s, in);   /* looked at once (fresh) */
	}
}

/* The keys woken since the last scan, sorted; *all: every key. */
struct woken {
	uint64_t *keys;
	size_t n;
	bool all;
	uint64_t gen, kgen;
};

static int cmp_key(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void take_woken(struct drv_http_server *s, struct woken *w)
{
	pthread_mutex_lock(&s->inmu);
	w->keys = s->keys;
	w->n = s->nkeys;
	w->all = s->keys_overflow;
	s->keys = NULL;
	s->nkeys = s->kcap = 0;
	s->keys_overflow = false;
	w->kgen = atomic_load(&s->key_gen);
	pthread_mutex_unlock(&s->inmu);
	w->gen = atomic_load(&s->wake_gen);
	if (w->n > 1)
		qsort(w->keys, w->n, sizeof(*w->keys), cmp_key);
}

/*
 * Was r woken since it was last looked at? An unkeyed request by any
 * drv_http_wake(), a keyed one by a wake of its key. A request new to this
 * thread is looked at once if any wake of its kind came since its event
 * thread looked (the keys of those wakes may be gone with an earlier scan).
 */
static bool woken(const struct drv_http_req *r, const struct woken *w)
{
	if (r->key == 0)
		return r->gen != w->gen;
	if (r->fresh && r->kgen != w->kgen)
		return true;
	return w->all || (w->n && bsearch(&r->key, w->keys, w->n, sizeof(*w->keys), cmp_key));
}

/* Should r go back to its event thread now? */
static bool ready(struct drv_http_req *r, const struct woken *w, bool stopping, int64_t now)
{
	bool due = now >= r->deadline_ms || stopping;
	bool again = woken(r, w);

	r->fresh = false;
	if (r->gone)
		return true;
	if (r->kind == PARK_STREAM) {
		r->ended = stopping;
		r->gen = w->gen;
		return again || due;
	}
	if (!again && !due)
		return false;
	return http_defer_try(r, due);
}

/* One pass over what the index says may be ready (all of it when
 * stopping or when too many keys were woken); returns the nearest deadline
 * left. */
static int64_t scan(struct drv_http_server *s, bool stopping)
{
	struct drv_http_req *r;
	int64_t now = drv_mono_ms();
	struct woken w;
	size_t resumed = 0;

	take_woken(s, &w);
	if (stopping || w.all) {
		for (r = s->parked; r; r = r->pnext)
			visit(s, r);
	} else {
		if (w.gen != s->last_gen)
			for (r = s->unkeyed; r; r = r->knext)
				visit(s, r);
		for (size_t k = 0; k < w.n; k++) {
			if (k && w.keys[k] == w.keys[k - 1])
				continue;
			for (r = *bucket_of(s, w.keys[k]); r; r = r->knext)
				if (r->kindexed == w.keys[k])
					visit(s, r);
		}
		/* the deadlines of the grid's last point, not those due since:
		 * a wake between points (a poke, a hang-up) serves none */
		visit_due(s, 0, now / DRV_HTTP_DEADLINE_ROUND_MS * DRV_HTTP_DEADLINE_ROUND_MS);
	}
	/* first every reply of the round, then the resumes back to back:
	 * resumed one by one between replies, an event thread woken by the
	 * first walked its suspended list again for each later one */
	for (size_t k = 0; k < s->nvisit; k++) {
		r = s->visit_v[k];
		/* its key may change while it is looked at (drv_http_wait_on) */
		key_unlink(r);
		if (!ready(r, &w, stopping, now)) {
			key_link(s, r);
			continue;
		}
		parked_del(s, r);
		if (r->sock >= 0)
			epoll_ctl(s->epfd, EPOLL_CTL_DEL, r->sock, NULL);
		s->visit_v[resumed++] = r;
	}
	/* counted before the resumes: once a connection is resumed its reply
	 * may reach the client before this thread runs again, and the stats
	 * must not be behind what a client has seen */
	if (resumed) {
		atomic_fetch_add(&s->resume_rounds, 1);
		atomic_fetch_add(&s->resumed, resumed);
	}
	for (size_t k = 0; k < resumed; k++)
		MHD_resume_connection(s->visit_v[k]->conn);
	s->nvisit = 0;
	s->visits++;
	s->last_gen = w.gen;
	drv_free(w.keys);
	return s->nheap ? s->heap[0]->deadline_ms : INT64_MAX;
}

void drv_http_server_wait_stats(struct drv_http_server *s, uint64_t *rounds, uint64_t *resumed)
{
	*rounds = atomic_load(&s->resume_rounds);
	*resumed = atomic_load(&s->resumed);
}

/* A deadline's round: the next multiple of DRV_HTTP_DEADLINE_ROUND_MS
 * (include/drover/http.h says why). */
static int64_t deadline_round(int64_t ms)
{
	const int64_t g = DRV_HTTP_DEADLINE_ROUND_MS;

	return ms == INT64_MAX ? ms : (ms + g - 1) / g * g;
}

/* Waits for what epoll reports until the deadline next (INT64_MAX: none),
 * on the deadline grid. */
static void collect(struct drv_http_server *s, int64_t next)
{
	struct epoll_event evs[64];
	int64_t now = drv_mono_ms();
	int64_t left;
	int n;

	next = deadline_round(next);
	left = next == INT64_MAX ? 60000 : DRV_MIN(DRV_MAX(0, next - now), 60000);

	/* under inmu, so a request parked from now on sees when we wake */
	pthread_mutex_lock(&s->inmu);
	if (s->incoming)
		left = 0;
	atomic_store(&s->sleeps_to, now + left);
	pthread_mutex_unlock(&s->inmu);
	/* connections with a deadline are looked at about once a second.
	 * Read after the store above: a connection timed from now on either
	 * is counted here or sees the long sleep and pokes (time_for) */
	if (left > 1000 && http_conns_timed(s)) {
		left = 1000;
		atomic_store(&s->sleeps_to, now + left);
	}
	n = epoll_wait(s->epfd, evs, 64, (int)left);

	for (int i = 0; i < n; i++) {
		struct drv_http_req *r = evs[i].data.ptr;
		uint64_t v;

		if (r) {
			r->gone = true;
			visit(s, r);
			continue;
		}
		/* clear the flag before reading, so a wake after this is not lost */
		atomic_store(&s->wake_pending, false);
		(void)!read(s->evfd, &v, sizeof(v));
	}
}

static void *waiter_main(void *arg)
{
	struct drv_http_server *s = arg;
	int64_t next = INT64_MAX;

	for (;;) {
		bool stopping;

		collect(s, next);
		pthread_mutex_lock(&s->inmu);
		stopping = s->closed;
		pthread_mutex_unlock(&s->inmu);
		adopt(s);
		next = scan(s, stopping);
		http_conns_expire(s, drv_mono_ms());
		if (stopping)
			break;
	}
	return NULL;
}

int http_wait_start(struct drv_http_server *s)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };

	pthread_mutex_init(&s->inmu, NULL);
	s->kbuckets = drv_calloc((size_t)1 << WAIT_BUCKET_BITS, sizeof(*s->kbuckets));
	s->visits = 1;
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	s->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->epfd < 0 || s->evfd < 0 || epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->evfd, &ev) < 0)
		goto fail;
	if (pthread_create(&s->waiter, NULL, waiter_main, s) != 0)
		goto fail;
	s->waiter_started = true;
	return 0;
fail:
	drv_free(s->kbuckets);
	s->kbuckets = NULL;
	if (s->epfd >= 0)
		close(s->epfd);
	if (s->evfd >= 0)
		close(s->evfd);
	pthread_mutex_destroy(&s->inmu);
	return DRV_EIO;
}

void http_wait_stop(struct drv_http_server *s)
{
	if (!s->waiter_started)
		return;
	pthread_mutex_lock(&s->inmu);
	s->closed = true;
	pthread_mutex_unlock(&s->inmu);
	http_wait_poke(s);
	pthread_join(s->waiter, NULL);
	s->waiter_started = false;
	drv_free(s->keys);
	drv_free(s->kbuckets);
	drv_free(s->heap);
	drv_free(s->visit_v);
	s->kbuckets = NULL;
	s->heap = NULL;
	s->visit_v = NULL;
	close(s->epfd);
	close(s->evfd);
	pthread_mutex_destroy(&s->inmu);
}
