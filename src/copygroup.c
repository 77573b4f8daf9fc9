/* SPDX-License-Identifier: Apache-2.0 */
/*
 * copygroup.c - small host-to-device copies of several threads handed to
 * the driver as one grouped call.
 *
 * DESIGN
 * Why: when many threads each read a small block (16 threads x 64 KiB,
 * the shape of a KV-cache offload), each queues its own copy, and separate
 * 64 KiB copies cannot pass 17.4 GB/s on the H200 machine's 55 GB/s bus,
 * where one cuMemcpyBatchAsync of 16 such copies moves 47.6
 * (bench/ceilings -t kvcopy); the driver also spent ~16 us per submission
 * with many threads contending for it.
 *
 * How (flat combining, no thread of its own): a thread with a copy to
 * queue appends a request to one of its GPU's two queues (its own: threads
 * are spread over a GPU's queues in the order they first group a copy
 * there; OPENCUFILE_CALLER_GROUPS_QUEUES, 1-4).  If no thread is leading that
 * queue, it leads: it takes up to CG_MAX queued requests (its own among
 * them, in order), queues them as one grouped call on one of the set's four
 * streams (in turn; each queue its own streams where the queues' count
 * divides four), records one event of a preallocated pool after them, and
 * hands every member the event; it repeats until its own request is
 * queued, then stops leading.  Others nap first (below: "Napping"),
 * then spin on their request (a driver call, microseconds; after 20 us
 * they yield the CPU on every turn, for a leader that lost its own on a
 * machine with more threads than CPUs) and take over the leading when it
 * ends with requests still queued.  Before it takes the queue a
 * leader waits up to 3 us (OPENCUFILE_CALLER_GROUPS_GATHER_US) for a full
 * group (waiting only until a share of the busy participants was queued
 * was measured and not kept, docs/history/benchmarks.md); groups
 * otherwise form only while a leader is busy in the driver - exactly when
 * copies contend.  A request
 * found alone is handed back to its thread, which queues it as before
 * (CG_ALONE).  Only while at least 10 participants are busy in the engine
 * (OPENCUFILE_CALLER_GROUPS_BUSY) does a copy try to join a group.
 *
 * Measured (H200 machine, 16 threads x 64 KiB, docs/history/benchmarks.md): with
 * one queue, without the wait 11 % of the copies were grouped (3.2 a
 * group) and nothing changed; with 1 us 85 % (3.9 a group): 17.5-20.2
 * GB/s against 16.1-16.8 ungrouped, p99 95-112 us against 150-154.  The
 * one leader was the limit: 16 callers spent ~36 us of each 67 us call
 * waiting for it (gdsio -P).  Two queues, whose leaders are in the
 * driver at once, with the 3 us wait: 20.3-21.2 GB/s, p99 77-87 us, 2.3
 * copies a group; four queues formed no groups to speak of (2.0 a group,
 * most copies alone).  16 x 256 KiB gains the same 5 % either way.  With 8
 * callers grouping cost 5 % (13.5 against 14.3), hence the floor of 10
 * busy participants.  The bus is not what limits those rows: copies
 * grouped 4 at a time reach 35.9 GB/s (bench/ceilings), and the callers'
 * CPU time is spent waiting.
 *
 * Napping: a thread whose request another leads does not spin for the
 * leader and the copy: it first sleeps a nap (nanosleep with the thread's
 * timer slack at 1 ns for the nap, restored after), then polls as before.
 * A timed sleep overshoots by ~6 us on the H200 machine (p99 15;
 * bench/wakeup "timer"), where a thread woken by another takes 15 us (p99
 * 60): the nap ends by the clock, nobody wakes the members.  Its length
 * adapts to when groups complete (OPENCUFILE_CALLER_GROUPS_NAP_US: 0 never
 * naps, N a fixed N us): a member that wakes to find its request still
 * queued under a leader, or its group's copy not done, lengthens the set's
 * nap by an eighth; one that finds its copy done shortens it by an eighth
 * x early / (100 - early) - the nap settles where `early` % of the members
 * wake before their copy is done (OPENCUFILE_CALLER_GROUPS_NAP_EARLY, 25),
 * between CG_NAP_MIN and CG_NAP_MAX.  A member that wakes to a queue nobody
 * leads takes the lead as before and leaves the nap alone (its wait was
 * nobody's copy).  Only a copy that is its request's one chunk naps
 * (cg_copy's nap_ok): a participant with more chunks to read goes on as
 * soon as its copy is queued, to read the next one meanwhile.  Leaders do
 * not nap after queuing their own group: tried (an adaptive nap of their
 * own), 16 x 64 KiB went 4 % slower for no less CPU, 16 x 256 KiB level
 * at 0.31 CPU s/GB against 0.34.
 * Measured (16 x 64 KiB, docs/history/benchmarks.md; H200 hosts, each against no
 * nap in the same call): whole-process CPU 0.66-0.71 -> 0.47-0.54 s/GB
 * (naps of 17-33 us), GB/s 2-5 % lower on three hosts, 2-3 % higher on a
 * fourth; on a fifth, fixed
 * naps of 10-30 us gave 7 % more (sixteen spinners had slowed the leaders'
 * driver calls) at 0.46-0.57.  Longer naps (11 % early: 0.47-0.53; a fixed
 * 40 us) cost up to 10 %.
 *
 * Waiting: each member waits for the group's event as for its own copy
 * (gpu_event_wait) and then releases the group; the last release returns
 * the event to the pool.  An event is recorded again only after every
 * member of its last group has seen it complete.  A group in flight has
 * at least one member's copy waiting, and a participant holding a lane has
 * at most one copy waiting per staging buffer, so a pool of one event per
 * lane buffer never runs dry; if it did, the requests would be handed back
 * (CG_ALONE).  Groups are polled for (gpu_event_wait with at most 1 MiB as
 * the budget), not slept for in the driver.
 *
 * Ordering: the set's streams are blocking streams of the same primary
 * context as every member's lane stream, so each copy is ordered with the
 * legacy default stream exactly as on the member's own stream; nothing else
 * is ordered between members.  The streams are the set's, not the leader's
 * lane's: they live until driver close, so a member whose wait failed can
 * always drain the stream its copy went on (cg_drain) before its call
 * returns, whatever became of the leader's lane.
 *
 * Failures: if the grouped call or the event record fails, the leader
 * drains its stream (a failed grouped call may have queued some copies,
 * and nothing may land after its member was told) and hands every request
 * back (CG_ALONE: the member copies the same bytes to the same place), or,
 * if the stream cannot be drained, fails them all (CG_FAILED: the member's
 * lane is then discarded, since a copy may still read its buffer).  A
 * member whose wait for the group's event fails drains the group's stream
 * (cg_drain) before its call returns, and discards its lane if that fails
 * too.  A driver that refuses the grouped form as invalid three times in
 * a row gets no more groups.
 */
#define _GNU_SOURCE
#include "copygroup.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "cuda_loader.h"
#include "internal.h"
#include "log.h"
#include "profile.h"

/* Copies per grouped call (the ceiling's 16: 47.6 GB/s; 128: 51.4). */
#define CG_MAX 16

#define REQ_PENDING (-1)

/* The adaptive nap's start and bounds (the comment at the top). */
#define CG_NAP_START_NS 20000
#define CG_NAP_MIN_NS 2000
#define CG_NAP_MAX_NS 1000000

struct ocf_copy_group {
	CUevent ev;
	CUstream stream; /* the stream the group went on (one of the set's) */
	atomic_int refs; /* members that have not released it */
	struct ocf_copy_group *next;
};

/* Streams the groups go on, in turn: the set's own, alive until it is
 * destroyed, so a member can always drain the one its copy went on. */
#define CG_STREAMS 4

/* One thread's copy, on its stack until its state is set. */
struct cg_req {
	CUdeviceptr dst;
	const void *src;
	size_t n;
	struct cg_req *next;
	/* REQ_PENDING, then an enum cg_result: the leader's last access
	 * (release), after which the request is its thread's again. */
	_Atomic int state;
	CUresult err;
	struct ocf_copy_group *grp;
	size_t group_bytes;
};

/* One queue of requests and its leader.  Several queues let several
 * leaders be in the driver at once (OPENCUFILE_CALLER_GROUPS_QUEUES); a
 * thread always joins the same queue. */
struct cg_queue {
	pthread_mutex_t mu; /* protects head, tail, and writes of leading */
	struct cg_req *head, *tail;
	atomic_bool leading;
	atomic_int queued; /* requests in the queue (changed under mu) */
	atomic_uint turn;  /* the next group's stream: its index + nqueues * turn */
	char pad[64];	   /* queues apart on the cache */
};

struct ocf_copy_groups {
	pthread_mutex_t free_mu; /* protects free */
	struct ocf_copy_group *free;
	atomic_bool on;			   /* false once the driver called the grouped form invalid */
	atomic_ulong calls, copies, alone; /* grouped calls, their copies, copies handed back */
	atomic_int invalid;		   /* grouped calls refused as invalid in a row */
	atomic_uint joined;		   /* threads given a queue so far */
	CUstream streams[CG_STREAMS];
	int nstreams;
	struct cg_queue queues[CG_STREAMS];
	int nqueues;
	int busy_min;
	uint64_t gather_ns; /* a leader waits this long for a fuller group */
	bool nap_adapts;       /* false: nap_ns is fixed (OPENCUFILE_CALLER_GROUPS_NAP_US) */
	int nap_early;	       /* % of members the adaptive nap lets wake before their copy is done */
	char pad2[64];	       /* nap_ns, written by every member, apart */
	_Atomic uint64_t nap_ns; /* a member's nap before it polls (0: none) */
	char pad3[64];
	int n;
	struct ocf_copy_group groups[];
};

#ifdef OCF_FAULT_INJECTION
static atomic_ulong naps_taken;	/* naps since the process started */
static _Atomic uint64_t nap_lo = UINT64_MAX, nap_hi; /* since the last look */
/* fault.h's test control: defined here, where the naps are. */
OCF_EXPORT unsigned long ocf_fault_cg_naps(uint64_t *shortest, uint64_t *longest)
{
	uint64_t lo = atomic_exchange(&nap_lo, UINT64_MAX), hi = atomic_exchange(&nap_hi, 0);
	if (shortest)
		*shortest = lo == UINT64_MAX ? 0 : lo;
	if (longest)
		*longest = hi;
	return atomic_load(&naps_taken);
}

static void nap_seen(uint64_t ns)
{
	atomic_fetch_add(&naps_taken, 1);
	ocf_atomic_min_u64(&nap_lo, ns);
	ocf_atomic_max_u64(&nap_hi, ns);
}
#endif

bool cg_form_available(void) { return ocf_cu.MemcpyBatchAsync && ocf_cfg.tuning.grouped_copies; }

CUresult cg_memcpy_batch(CUdeviceptr *dst, CUdeviceptr *src, size_t *len, size_t k, CUstream stream)
{
	CUmemcpyAttributes attr = {.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM};
	size_t attr_idx = 0;
	return ocf_cu.MemcpyBatchAsync(dst, src, len, k, &attr, &attr_idx, 1, stream);
}

struct ocf_copy_groups *cg_create(int n)
{
	const struct ocf_tuning *t = &ocf_cfg.tuning;
	if (n <= 0 || !cg_form_available() || !t->caller_groups)
		return NULL;
	struct ocf_copy_groups *cg = calloc(1, sizeof(*cg) + (size_t)n * sizeof(cg->groups[0]));
	if (!cg)
		return NULL;
	pthread_mutex_init(&cg->free_mu, NULL);
	atomic_init(&cg->on, true);
	cg->busy_min = t->caller_groups_busy;
	/* Bounded (at most 10 ms): a leader's wait holds up every member of
	 * its queue. */
	cg->gather_ns = t->caller_groups_gather_ns;
	/* At most 1 ms (CG_NAP_MAX_NS) where given. */
	cg->nap_adapts = t->caller_groups_nap_ns < 0;
	cg->nap_early = t->caller_groups_nap_early;
	atomic_init(&cg->nap_ns, cg->nap_adapts ? CG_NAP_START_NS : (uint64_t)t->caller_groups_nap_ns);
	for (int i = 0; i < CG_STREAMS; i++) {
		if (ocf_cu.StreamCreate(&cg->streams[cg->nstreams], CU_STREAM_DEFAULT) != CUDA_SUCCESS)
			break;
		cg->nstreams++;
	}
	/* Never more queues than streams. */
	cg->nqueues = t->caller_groups_queues;
	if (cg->nqueues > cg->nstreams)
		cg->nqueues = cg->nstreams;
	if (cg->nqueues < 1)
		cg->nqueues = 1;
	for (int i = 0; i < cg->nqueues; i++) {
		pthread_mutex_init(&cg->queues[i].mu, NULL);
		atomic_init(&cg->queues[i].leading, false);
		atomic_init(&cg->queues[i].queued, 0);
	}
	unsigned flags = CU_EVENT_DISABLE_TIMING;
	for (int i = 0; cg->nstreams && i < n; i++) {
		struct ocf_copy_group *grp = &cg->groups[cg->n];
		if (ocf_cu.EventCreate(&grp->ev, flags) != CUDA_SUCCESS)
			break;
		atomic_init(&grp->refs, 0);
		grp->next = cg->free;
		cg->free = grp;
		cg->n++;
	}
	if (cg->n == 0) {
		cg_destroy(cg);
		return NULL;
	}
	log_debug("copy groups: %d events, %d queues, grouping from %d busy participants", cg->n, cg->nqueues,
		  cg->busy_min);
	return cg;
}

void cg_destroy(struct ocf_copy_groups *cg)
{
	if (!cg)
		return;
	unsigned long calls = atomic_load(&cg->calls), copies = atomic_load(&cg->copies);
	if (calls)
		log_info("copy groups: %lu grouped calls of %lu copies (%.1f each); %lu copies queued alone; "
			 "members' nap %.1f us",
			 calls, copies, (double)copies / (double)calls, atomic_load(&cg->alone),
			 (double)atomic_load(&cg->nap_ns) / 1e3);
	for (int i = 0; i < cg->n; i++)
		ocf_cu.EventDestroy(cg->groups[i].ev);
	for (int i = 0; i < cg->nstreams; i++)
		ocf_cu.StreamDestroy(cg->streams[i]);
	for (int i = 0; i < cg->nqueues; i++)
		pthread_mutex_destroy(&cg->queues[i].mu);
	pthread_mutex_destroy(&cg->free_mu);
	free(cg);
}

bool cg_wanted(const struct ocf_copy_groups *cg, int busy)
{
	return cg && busy >= cg->busy_min && atomic_load_explicit(&cg->on, memory_order_relaxed);
}

/* Sets a request's outcome: the last access to it. */
static void settle(struct cg_req *q, enum cg_result res)
{
	atomic_store_explicit(&q->state, (int)res, memory_order_release);
}

/* Takes a free group event, or NULL. */
static struct ocf_copy_group *take_group(struct ocf_copy_groups *cg)
{
	pthread_mutex_lock(&cg->free_mu);
	struct ocf_copy_group *grp = cg->free;
	if (grp)
		cg->free = grp->next;
	pthread_mutex_unlock(&cg->free_mu);
	return grp;
}

/* Returns a group event to the pool. */
static void put_group(struct ocf_copy_groups *cg, struct ocf_copy_group *grp)
{
	pthread_mutex_lock(&cg->free_mu);
	grp->next = cg->free;
	cg->free = grp;
	pthread_mutex_unlock(&cg->free_mu);
}

/* Queues the k requests b[] of queue cq as one grouped call followed by
 * grp's event on the queue's next stream, and settles them. */
static void submit(struct ocf_copy_groups *cg, struct cg_queue *cq, struct cg_req **b, int k,
		   struct ocf_copy_group *grp)
{
	unsigned turn = atomic_fetch_add_explicit(&cq->turn, 1, memory_order_relaxed);
	unsigned index = (unsigned)(cq - cg->queues);
	CUstream stream = cg->streams[(index + (unsigned)cg->nqueues * turn) % (unsigned)cg->nstreams];
	grp->stream = stream;
	CUdeviceptr dst[CG_MAX], src[CG_MAX];
	size_t len[CG_MAX], total = 0;
	for (int i = 0; i < k; i++) {
		dst[i] = b[i]->dst;
		src[i] = (CUdeviceptr)(uintptr_t)b[i]->src;
		len[i] = b[i]->n;
		total += b[i]->n;
	}
	uint64_t t0 = prof_now();
	CUresult r = cg_memcpy_batch(dst, src, len, (size_t)k, stream);
	bool batch_ok = r == CUDA_SUCCESS;
	if (batch_ok)
		r = ocf_cu.EventRecord(grp->ev, stream);
	prof_time(PROF_T_SUBMIT, t0);
	if (r == CUDA_SUCCESS) {
		atomic_store_explicit(&cg->invalid, 0, memory_order_relaxed);
		atomic_fetch_add_explicit(&cg->calls, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&cg->copies, (unsigned long)k, memory_order_relaxed);
		atomic_store_explicit(&grp->refs, k, memory_order_relaxed); /* published by settle */
		for (int i = 0; i < k; i++) {
			b[i]->grp = grp;
			b[i]->group_bytes = total;
			settle(b[i], CG_GROUPED);
		}
		return;
	}
	static atomic_bool warned;
	if (!atomic_exchange(&warned, true))
		log_warn("grouped copy of %d blocks failed (%s): each is copied by its own thread", k,
			 cuda_error_name(r));
	/* Refused as invalid three times in a row: the driver does not take
	 * the form (one bad copy among the members, such as memory the
	 * application freed, is not reason enough). */
	if (!batch_ok && (r == CUDA_ERROR_INVALID_VALUE || r == CUDA_ERROR_NOT_SUPPORTED) &&
	    atomic_fetch_add_explicit(&cg->invalid, 1, memory_order_relaxed) + 1 >= 3)
		atomic_store_explicit(&cg->on, false, memory_order_relaxed);
	put_group(cg, grp);
	/* Whatever the failed calls queued lands before anyone is told. */
	CUresult s = ocf_cu.StreamSynchronize(stream);
	for (int i = 0; i < k; i++) {
		b[i]->err = s;
		settle(b[i], s == CUDA_SUCCESS ? CG_ALONE : CG_FAILED);
	}
}

/* Called with cq->mu held and cq->leading just set by this thread; returns
 * with it released, once `mine` is settled. */
static void lead(struct ocf_copy_groups *cg, struct cg_queue *cq, struct cg_req *mine)
{
	int want = CG_MAX;
	for (;;) {
		if (cg->gather_ns) {
			/* Let more requests join, while fewer than a group are queued. */
			pthread_mutex_unlock(&cq->mu);
			uint64_t start = ocf_now_ns();
			while (atomic_load_explicit(&cq->queued, memory_order_relaxed) < want &&
			       ocf_now_ns() - start < cg->gather_ns)
				ocf_cpu_relax();
			pthread_mutex_lock(&cq->mu);
		}
		struct cg_req *b[CG_MAX];
		int k = 0;
		bool has_mine = false;
		while (cq->head && k < CG_MAX) {
			struct cg_req *q = cq->head;
			cq->head = q->next;
			has_mine |= q == mine;
			b[k++] = q;
		}
		atomic_fetch_sub_explicit(&cq->queued, k, memory_order_relaxed);
		if (!cq->head)
			cq->tail = NULL;
		pthread_mutex_unlock(&cq->mu);
		struct ocf_copy_group *grp = NULL;
		if (k >= 2 && atomic_load_explicit(&cg->on, memory_order_relaxed))
			grp = take_group(cg);
		if (grp)
			submit(cg, cq, b, k, grp);
		else {
			atomic_fetch_add_explicit(&cg->alone, (unsigned long)k, memory_order_relaxed);
			for (int i = 0; i < k; i++)
				settle(b[i], CG_ALONE);
		}
		pthread_mutex_lock(&cq->mu);
		if (has_mine || k == 0) {
			atomic_store_explicit(&cq->leading, false, memory_order_release);
			pthread_mutex_unlock(&cq->mu);
			return;
		}
	}
}

/* The queue of the calling thread: threads are spread over a set's queues
 * in the order they first group a copy there, and keep theirs while they
 * use that set (a thread that moves to another GPU's set draws again). */
static struct cg_queue *my_queue(struct ocf_copy_groups *cg)
{
	if (cg->nqueues == 1)
		return &cg->queues[0];
	static __thread const struct ocf_copy_groups *slot_set;
	static __thread unsigned slot;
	if (slot_set != cg) {
		slot = atomic_fetch_add_explicit(&cg->joined, 1, memory_order_relaxed);
		slot_set = cg;
	}
	return &cg->queues[slot % (unsigned)cg->nqueues];
}

/* A member's nap (ocf_nap_ns: by the clock, not the timer slack). */
static void nap(uint64_t ns)
{
	ocf_nap_ns(ns);
#ifdef OCF_FAULT_INJECTION
	nap_seen(ns);
#endif
}

/* A member's nap was short (longer: true) or long by what it found on
 * waking: lengthens the set's nap by an eighth, or shortens it by as much
 * times early / (100 - early), within its bounds. */
static void nap_adjust(struct ocf_copy_groups *cg, uint64_t was, bool longer)
{
	uint64_t v = longer ? was + was / 8 + 1
			    : was - was * (uint64_t)cg->nap_early / (8 * (uint64_t)(100 - cg->nap_early));
	v = v < CG_NAP_MIN_NS ? CG_NAP_MIN_NS : v > CG_NAP_MAX_NS ? CG_NAP_MAX_NS : v;
	/* Lost races between members lose a step, never the bounds. */
	atomic_compare_exchange_strong_explicit(&cg->nap_ns, &was, v, memory_order_relaxed, memory_order_relaxed);
}

/* A member's nap while another thread leads its request (the comment at
 * the top): sleeps, then tells the set's nap what it found. */
static void member_nap(struct ocf_copy_groups *cg, struct cg_queue *cq, struct cg_req *r)
{
	uint64_t ns = atomic_load_explicit(&cg->nap_ns, memory_order_relaxed);
	if (!ns)
		return;
	nap(ns);
	if (!cg->nap_adapts)
		return;
	int st = atomic_load_explicit(&r->state, memory_order_acquire);
	if (st == REQ_PENDING) {
		/* Still queued: short, if a leader is at work on the queue. */
		if (atomic_load_explicit(&cq->leading, memory_order_acquire))
			nap_adjust(cg, ns, true);
	} else if (st == CG_GROUPED) {
		CUresult q = ocf_cu.EventQuery(r->grp->ev);
		if (q == CUDA_SUCCESS || q == CUDA_ERROR_NOT_READY)
			nap_adjust(cg, ns, q == CUDA_ERROR_NOT_READY);
	}
}

enum cg_result cg_copy(struct ocf_copy_groups *cg, CUdeviceptr dst, const void *src, size_t n, bool nap_ok,
		       CUevent *ev, struct ocf_copy_group **grp, size_t *wait_bytes, CUresult *err)
{
	struct cg_req r = {.dst = dst, .src = src, .n = n};
	atomic_init(&r.state, REQ_PENDING);
	struct cg_queue *cq = my_queue(cg);
	pthread_mutex_lock(&cq->mu);
	if (cq->tail)
		cq->tail->next = &r;
	else
		cq->head = &r;
	cq->tail = &r;
	atomic_fetch_add_explicit(&cq->queued, 1, memory_order_relaxed);
	if (!atomic_load_explicit(&cq->leading, memory_order_relaxed)) {
		atomic_store_explicit(&cq->leading, true, memory_order_relaxed);
		lead(cg, cq, &r);
	} else {
		pthread_mutex_unlock(&cq->mu);
		if (nap_ok)
			member_nap(cg, cq, &r);
	}
	int st;
	uint64_t spun_since = 0;
	while ((st = atomic_load_explicit(&r.state, memory_order_acquire)) == REQ_PENDING) {
		/* The leader stopped with this request still queued: lead. */
		if (!atomic_load_explicit(&cq->leading, memory_order_acquire)) {
			pthread_mutex_lock(&cq->mu);
			if (atomic_load_explicit(&r.state, memory_order_acquire) == REQ_PENDING &&
			    !atomic_load_explicit(&cq->leading, memory_order_relaxed)) {
				atomic_store_explicit(&cq->leading, true, memory_order_relaxed);
				lead(cg, cq, &r);
			} else {
				pthread_mutex_unlock(&cq->mu);
			}
			continue;
		}
		ocf_cpu_relax();
		/* A leader that lost its CPU (more threads than CPUs) must get
		 * one back: after 20 us of spinning, yield on every turn. */
		uint64_t now = ocf_now_ns();
		if (!spun_since)
			spun_since = now;
		else if (now - spun_since > 20000)
			sched_yield();
	}
	switch ((enum cg_result)st) {
	case CG_GROUPED:
		*ev = r.grp->ev;
		*grp = r.grp;
		/* Polled, as short copies are (gpu_event_wait), whatever the
		 * group's size: its events are not slept for. */
		*wait_bytes = r.group_bytes < ((size_t)1 << 20) ? r.group_bytes : (size_t)1 << 20;
		break;
	case CG_FAILED:
		*err = r.err;
		break;
	case CG_ALONE:
		break;
	}
	return (enum cg_result)st;
}

CUresult cg_drain(struct ocf_copy_group *grp)
{
	return ocf_cu.StreamSynchronize(grp->stream);
}

void cg_release(struct ocf_copy_groups *cg, struct ocf_copy_group *grp)
{
	if (atomic_fetch_sub_explicit(&grp->refs, 1, memory_order_acq_rel) == 1)
		put_group(cg, grp);
}
