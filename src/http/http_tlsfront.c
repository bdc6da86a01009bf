/*
 * http_tlsfront.c: TLS in front of libmicrohttpd.
 *
 * With a certificate the server does TLS itself: DRV_HTTP_THREADS front
 * threads accept on the listen socket, hand libmicrohttpd one end of a
 * socketpair per connection (MHD_add_connection, with the peer's address,
 * so the accept policy and every timeout apply as before) and pump bytes
 * between the other end and the TLS session, 64 KiB each way (taken
 * while bytes wait, so an idle connection holds none). A connection so
 * costs three descriptors, not one: the server's connection limit is a
 * third of what it is without TLS.
 *
 * Why not libmicrohttpd's own TLS: in 0.9.75 (Debian 12) an upgraded TLS
 * connection (WebSocket, SPDY: exec, attach, port-forward) is forwarded
 * through an 8-byte "emergency" buffer, because the response's write
 * buffer has taken the whole connection pool by then (fixed upstream in
 * 1.0.0, "Upgraded TLS: fixed inefficient communication"): 4 bytes per
 * TLS record each way, so a port-forward download crawled at tens of
 * kB/s with both ends busy and looked stalled.
 *
 * Each front thread has its own epoll (level-triggered; the listen socket
 * with EPOLLEXCLUSIVE) and its own connections. A peer's end of input is
 * passed on as shutdown(SHUT_WR) of the socketpair, which the server's
 * hang-up watch sees; libmicrohttpd's close (or its shutdown of the pair,
 * as the connection policy does) ends the TLS connection once what it
 * wrote has been sent.
 */
#include "http_int.h"

#include <errno.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#define BUF (64u << 10)
#define REC (16u << 10)

struct tconn {
	struct tconn *next;
	int fd, sp;                /* the peer's TCP socket, our end of the pair */
	gnutls_session_t g;
	bool hs_done, tls_eof, tls_dead, sp_eof, sp_shut, dead;
	unsigned fd_ev, sp_ev;     /* the epoll interest registered */
	size_t nin, inoff;         /* from the peer, for libmicrohttpd */
	size_t nout, outoff;       /* from libmicrohttpd, for the peer */
	unsigned char *in, *out;   /* BUF each while in use, else NULL */
};

struct front {
	struct http_tlsfront *tf;
	pthread_t th;
	int ep;
	struct tconn *conns;
};

struct http_tlsfront {
	struct drv_http_server *s;
	gnutls_certificate_credentials_t cred;
	gnutls_priority_t prio;
	int evfd;
	struct front fr[DRV_HTTP_THREADS];
	int nfr;
};

/* epoll data: the connection's address with the low bit telling which of
 * its two sockets (0 the peer's, 1 the pair) */
static void set_ev(struct front *f, struct tconn *c, bool pair, unsigned ev)
{
	unsigned *cur = pair ? &c->sp_ev : &c->fd_ev;
	struct epoll_event e = { .events = ev, .data.u64 = (uint64_t)(uintptr_t)c | pair };

	if (*cur == ev)
		return;
	epoll_ctl(f->ep, EPOLL_CTL_MOD, pair ? c->sp : c->fd, &e);
	*cur = ev;
}

/* c, already off its front's list */
static void conn_free(struct front *f, struct tconn *c)
{
	epoll_ctl(f->ep, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	if (c->sp >= 0) {
		epoll_ctl(f->ep, EPOLL_CTL_DEL, c->sp, NULL);
		close(c->sp);
	}
	gnutls_deinit(c->g);
	drv_free(c->in);
	drv_free(c->out);
	drv_free(c);
}

static void on_accept(struct front *f)
{
	struct http_tlsfront *tf = f->tf;

	for (;;) {
		struct sockaddr_storage a;
		socklen_t alen = sizeof(a);
		int fd = accept4(tf->s->fd, (struct sockaddr *)&a, &alen, SOCK_NONBLOCK | SOCK_CLOEXEC);
		int sv[2];
		struct tconn *c;
		struct epoll_event e;

		if (fd < 0)
			return;   /* EAGAIN (another front thread took it), or EMFILE */
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0) {
			close(fd);
			continue;
		}
		c = drv_calloc(1, sizeof(*c));
		c->fd = fd;
		c->sp = sv[0];
		if (gnutls_init(&c->g, GNUTLS_SERVER | GNUTLS_NONBLOCK) < 0) {
			close(fd);
			close(sv[0]);
			close(sv[1]);
			drv_free(c);
			continue;
		}
		gnutls_priority_set(c->g, tf->prio);
		gnutls_credentials_set(c->g, GNUTLS_CRD_CERTIFICATE, tf->cred);
		gnutls_transport_set_int(c->g, fd);
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
		/* libmicrohttpd takes sv[1] now (and closes it if it refuses):
		 * its accept policy and header timeout cover the handshake too */
		if (MHD_add_connection(tf->s->mhd, sv[1], (struct sockaddr *)&a, alen) != MHD_YES) {
			gnutls_deinit(c->g);
			close(fd);
			close(sv[0]);
			drv_free(c);
			continue;
		}
		c->next = f->conns;
		f->conns = c;
		c->fd_ev = EPOLLIN;
		e = (struct epoll_event){ .events = EPOLLIN, .data.u64 = (uint64_t)(uintptr_t)c };
		epoll_ctl(f->ep, EPOLL_CTL_ADD, fd, &e);
		c->sp_ev = 0;
		e = (struct epoll_event){ .events = 0, .data.u64 = (uint64_t)(uintptr_t)c | 1 };
		epoll_ctl(f->ep, EPOLL_CTL_ADD, c->sp, &e);
	}
}

/* Moves what can move now; false when the connection is over. */
static bool pump(struct front *f, struct tconn *c)
{
	bool moved;

	if (!c->hs_done) {
		int rc = gnutls_handshake(c->g);

		if (rc == GNUTLS_E_AGAIN || rc == GNUTLS_E_INTERRUPTED) {
			char b;

			/* libmicrohttpd gave up on it (its header timeout) */
			if (recv(c->sp, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0)
				return false;
			set_ev(f, c, false, gnutls_record_get_direction(c->g) ? EPOLLOUT : EPOLLIN);
			set_ev(f, c, true, EPOLLIN);
			return true;
		}
		if (rc < 0)
			return false;
		c->hs_done = true;
	}
	do {
		moved = false;
		/* the peer's bytes, into the pair */
		if (!c->in && !c->tls_eof)
			c->in = drv_malloc(BUF);
		while (!c->tls_eof && c->nin + REC <= BUF) {
			ssize_t k = gnutls_record_recv(c->g, c->in + c->nin, BUF - c->nin);

			if (k > 0) {
				c->nin += (size_t)k;
				moved = true;
			} else if (k == GNUTLS_E_AGAIN || k == GNUTLS_E_INTERRUPTED) {
				break;
			} else if (k == 0 || gnutls_error_is_fatal((int)k)) {
				c->tls_eof = true;
				c->tls_dead = k != 0;
			} else {
				break;   /* a warning alert, a renegotiation asked: ignored */
			}
		}
		while (c->inoff < c->nin) {
			ssize_t k = send(c->sp, c->in + c->inoff, c->nin - c->inoff, MSG_NOSIGNAL);

			if (k <= 0) {
				if (k < 0 && (errno == EAGAIN || errno == EINTR))
					break;
				return false;   /* libmicrohttpd closed its end */
			}
			c->inoff += (size_t)k;
			moved = true;
		}
		if (c->inoff == c->nin)
			c->inoff = c->nin = 0;
		if (c->tls_eof && !c->nin && !c->sp_shut) {
			shutdown(c->sp, SHUT_WR);
			c->sp_shut = true;
		}
		/* libmicrohttpd's bytes, to the peer */
		if (!c->nout && !c->sp_eof) {
			ssize_t k;

			if (!c->out)
				c->out = drv_malloc(BUF);
			k = recv(c->sp, c->out, BUF, 0);

			if (k > 0) {
				c->nout = (size_t)k;
				c->outoff = 0;
				moved = true;
			} else if (k == 0 || (errno != EAGAIN && errno != EINTR)) {
				c->sp_eof = true;
			}
		}
		while (c->outoff < c->nout && !c->tls_dead) {
			/* the same length again after GNUTLS_E_AGAIN, as gnutls asks */
			size_t n = DRV_MIN(c->nout - c->outoff, REC);
			ssize_t k = gnutls_record_send(c->g, c->out + c->outoff, n);

			if (k == GNUTLS_E_AGAIN || k == GNUTLS_E_INTERRUPTED)
				break;
			if (k < 0)
				return false;
			c->outoff += (size_t)k;
			moved = true;
		}
		if (c->outoff == c->nout)
			c->outoff = c->nout = 0;
	} while (moved && !c->tls_dead);
	if (c->tls_dead || (c->sp_eof && !c->nout)) {
		if (!c->tls_dead)
			gnutls_bye(c->g, GNUTLS_SHUT_WR);   /* best effort, non-blocking */
		return false;
	}
	/* an idle connection keeps no buffers */
	if (!c->nin) {
		drv_free(c->in);
		c->in = NULL;
	}
	if (!c->nout) {
		drv_free(c->out);
		c->out = NULL;
	}
	set_ev(f, c, false, (!c->tls_eof && !c->nin ? EPOLLIN : 0) | (c->nout ? EPOLLOUT : 0));
	set_ev(f, c, true, (!c->sp_eof && !c->nout ? EPOLLIN : 0) | (c->nin ? EPOLLOUT : 0));
	return true;
}

static void *front_main(void *arg)
{
	struct front *f = arg;

	for (;;) {
		struct epoll_event ev[64];
		int n = epoll_wait(f->ep, ev, 64, -1);

		for (int i = 0; i < n; i++) {
			struct tconn *c;

			if (ev[i].data.u64 == 1)
				return NULL;   /* the stop eventfd */
			if (ev[i].data.u64 == 2) {
				on_accept(f);
				continue;
			}
			c = (struct tconn *)(uintptr_t)(ev[i].data.u64 & ~(uint64_t)1);
			if (!c->dead && !pump(f, c))
				c->dead = true;   /* freed after the batch: it may come again in it */
		}
		for (struct tconn **pp = &f->conns; *pp;) {
			struct tconn *c = *pp;

			if (c->dead) {
				*pp = c->next;
				conn_free(f, c);
			} else {
				pp = &c->next;
			}
		}
	}
}

int http_tlsfront_start(struct drv_http_server *s)
{
	struct http_tlsfront *tf = drv_calloc(1, sizeof(*tf));
	gnutls_datum_t cert = { (unsigned char *)s->tls.cert, (unsigned)strlen(s->tls.cert) };
	gnutls_datum_t key = { (unsigned char *)s->tls.key, (unsigned)strlen(s->tls.key) };

	tf->s = s;
	tf->evfd = -1;
	if (gnutls_certificate_allocate_credentials(&tf->cred) < 0) {
		drv_free(tf);
		return DRV_EIO;
	}
	if (gnutls_certificate_set_x509_key_mem(tf->cred, &cert, &key, GNUTLS_X509_FMT_PEM) < 0 ||
	    gnutls_priority_init(&tf->prio, DRV_TLS_PRIORITIES, NULL) < 0 ||
	    (tf->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
		goto fail;
	fcntl(s->fd, F_SETFL, fcntl(s->fd, F_GETFL) | O_NONBLOCK);
	for (int i = 0; i < DRV_HTTP_THREADS; i++) {
		struct front *f = &tf->fr[i];
		struct epoll_event e = { .events = EPOLLIN, .data.u64 = 1 };

		f->tf = tf;
		if ((f->ep = epoll_create1(EPOLL_CLOEXEC)) < 0)
			goto fail;
		epoll_ctl(f->ep, EPOLL_CTL_ADD, tf->evfd, &e);
		e = (struct epoll_event){ .events = EPOLLIN | EPOLLEXCLUSIVE, .data.u64 = 2 };
		epoll_ctl(f->ep, EPOLL_CTL_ADD, s->fd, &e);
		if (pthread_create(&f->th, NULL, front_main, f) != 0) {
			close(f->ep);
			goto fail;
		}
		tf->nfr++;
	}
	s->front = tf;
	return 0;
fail:
	s->front = tf;
	http_tlsfront_stop(s);
	return DRV_EIO;
}

void http_tlsfront_stop(struct drv_http_server *s)
{
	struct http_tlsfront *tf = s->front;
	uint64_t one = 1;

	if (!tf)
		return;
	if (tf->evfd >= 0 && write(tf->evfd, &one, sizeof(one)) < 0) {
		/* a fresh eventfd's counter cannot overflow with one write */
	}
	for (int i = 0; i < tf->nfr; i++) {
		struct front *f = &tf->fr[i];

		pthread_join(f->th, NULL);
		while (f->conns) {
			struct tconn *c = f->conns;

			f->conns = c->next;
			conn_free(f, c);
		}
		close(f->ep);
	}
	if (tf->evfd >= 0)
		close(tf->evfd);
	if (tf->prio)
		gnutls_priority_deinit(tf->prio);
	gnutls_certificate_free_credentials(tf->cred);
	drv_free(tf);
	s->front = NULL;
}
