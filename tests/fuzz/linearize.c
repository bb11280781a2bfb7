// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * linearize.c: is a history of ntsync calls linearizable? (see linearize.h)
 *
 * The algorithm follows, in our own code:
 * - J. M. Wing and C. Gong, "Testing and verifying concurrent objects",
 *   J. Parallel Distrib. Comput. 17 (1993): keep the history as a list of
 *   call and return entries in time order; a call may be linearized next
 *   when no return precedes it in the list (no pending call returned before
 *   it was made); linearize it (apply it to the model, remove its two
 *   entries), or, reaching a return entry first, undo the last choice.
 * - G. Lowe, "Testing for linearizability", Concurrency Computat.: Pract.
 *   Exper. 29 (2017): remember every (set of linearized calls, model
 *   state) reached and never search from one twice; the search is then
 *   bounded by the number of such configurations, not of orders.
 * - Porcupine (A. Athalye, github.com/anishathalye/porcupine): split the
 *   history into independent parts first (P-compositionality).  Here the
 *   parts are the connected components of "these objects appear in one
 *   call": linearizability is local (Herlihy and Wing 1990), and a wait
 *   over several objects makes them one compound object.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "linearize.h"

#define W64 ((NTL_MAX_OPS + 63) / 64)

/* ------------------------------------------------------ the memo table */

/*
 * Keys: the set of linearized calls (as 32-bit words) followed by the
 * state: two words per object and one word of abandoned bits.  Objects'
 * types and event kinds never change, so they are not part of it.
 */
struct memo {
	uint32_t kw;		/* words per key */
	uint32_t *keys;		/* n keys, kw words each */
	uint32_t n, cap;
	uint32_t *slot;		/* open addressing: key index + 1, 0 empty */
	uint32_t nslot;		/* a power of two */
};

static uint32_t hash_key(const uint32_t *k, uint32_t kw)
{
	uint64_t h = 0x9e3779b97f4a7c15ull;

	for (uint32_t i = 0; i < kw; i++) {
		h ^= k[i];
		h *= 0xff51afd7ed558ccdull;
		h ^= h >> 29;
	}
	return (uint32_t)(h ^ (h >> 32));
}

static bool memo_init(struct memo *m, uint32_t kw)
{
	m->kw = kw;
	m->n = 0;
	m->cap = 1024;
	m->nslot = 2048;
	m->keys = malloc((size_t)m->cap * kw * sizeof(uint32_t));
	m->slot = calloc(m->nslot, sizeof(uint32_t));
	return m->keys && m->slot;
}

static void memo_free(struct memo *m)
{
	free(m->keys);
	free(m->slot);
}

static bool memo_grow(struct memo *m)
{
	uint32_t nslot = m->nslot * 2, *slot = calloc(nslot, sizeof(uint32_t));

	if (!slot)
		return false;
	for (uint32_t i = 0; i < m->n; i++) {
		uint32_t h = hash_key(&m->keys[(size_t)i * m->kw], m->kw) & (nslot - 1);

		while (slot[h])
			h = (h + 1) & (nslot - 1);
		slot[h] = i + 1;
	}
	free(m->slot);
	m->slot = slot;
	m->nslot = nslot;
	return true;
}

/* 1: new and inserted, 0: seen before, -1: out of memory */
static int memo_insert(struct memo *m, const uint32_t *key)
{
	uint32_t h = hash_key(key, m->kw) & (m->nslot - 1);

	while (m->slot[h]) {
		if (!memcmp(&m->keys[(size_t)(m->slot[h] - 1) * m->kw], key, m->kw * sizeof(uint32_t)))
			return 0;
		h = (h + 1) & (m->nslot - 1);
	}
	if (m->n == m->cap) {
		uint32_t *k = realloc(m->keys, (size_t)m->cap * 2 * m->kw * sizeof(uint32_t));

		if (!k)
			return -1;
		m->keys = k;
		m->cap *= 2;
	}
	memcpy(&m->keys[(size_t)m->n * m->kw], key, m->kw * sizeof(uint32_t));
	m->slot[h] = ++m->n;
	if (m->n * 2 > m->nslot && !memo_grow(m))
		return -1;
	return 1;
}

/* ------------------------------------------------- one part, searched */

struct entry { uint64_t t; uint32_t op; bool call; };

static int cmp_entry(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	/* at equal times calls first: the two calls are then concurrent */
	if (x->call != y->call)
		return x->call ? -1 : 1;
	return x->op < y->op ? -1 : x->op > y->op;
}

static void make_key(uint32_t *key, const uint64_t *lin, uint32_t nw, const struct ntm_obj *st, uint32_t nobj,
		     uint64_t pres)
{
	uint32_t k = 0, dead = 0;

	for (uint32_t i = 0; i < nw; i++) {
		key[k++] = (uint32_t)lin[i];
		key[k++] = (uint32_t)(lin[i] >> 32);
	}
	for (uint32_t i = 0; i < nobj; i++) {
		key[k++] = st[i].v[0];
		key[k++] = st[i].v[1];
		dead |= (uint32_t)st[i].abandoned << i | (uint32_t)st[i].pulsed << (16 + i);
	}
	key[k++] = dead;
	key[k++] = (uint32_t)pres;
	key[k] = (uint32_t)(pres >> 32);
}

static bool any_pulsed(const struct ntm_obj *st, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (st[i].pulsed)
			return true;
	return false;
}

struct frame { uint32_t op; uint64_t pres; struct ntm_obj st[NTL_MAX_OBJ]; };

static enum ntl_verdict search(const struct ntl_history *h, unsigned long max_states, uint64_t *states)
{
	uint32_t n = h->nops, nw = (n + 63) / 64, head = 0, tail = 2 * n + 1;
	uint32_t *next = NULL, *prev = NULL, *call_node = NULL, *ret_node = NULL, key[2 * W64 + 2 * NTL_MAX_OBJ + 3];
	struct entry *ev = NULL;
	struct frame *stack = NULL;
	uint64_t lin[W64] = { 0 };
	struct ntm_obj st[NTL_MAX_OBJ];
	struct memo memo;
	enum ntl_verdict v = NTL_GAVE_UP;
	uint32_t depth = 0, cur, need = 0, done = 0;
	uint64_t pres = 0;	/* a pulse in progress: it can wake waits invoked before this */

	for (uint32_t i = 0; i < n; i++)
		need += !h->ops[i].whatever;
	if (need == 0)
		return NTL_OK;
	if (!memo_init(&memo, 2 * nw + 2 * h->nobj + 3))
		goto out;
	ev = malloc(2 * n * sizeof(*ev));
	next = malloc((2 * n + 2) * sizeof(*next));
	prev = malloc((2 * n + 2) * sizeof(*prev));
	call_node = malloc(n * sizeof(*call_node));
	ret_node = malloc(n * sizeof(*ret_node));
	stack = malloc(n * sizeof(*stack));
	if (!ev || !next || !prev || !call_node || !ret_node || !stack)
		goto out;
	for (uint32_t i = 0; i < n; i++) {
		ev[2 * i] = (struct entry){ h->ops[i].inv, i, true };
		ev[2 * i + 1] = (struct entry){ h->ops[i].whatever ? UINT64_MAX : h->ops[i].res, i, false };
	}
	qsort(ev, 2 * n, sizeof(*ev), cmp_entry);
	/* nodes 1..2n in time order between the head and tail sentinels */
	for (uint32_t i = 0; i <= 2 * n; i++) {
		next[i] = i + 1;
		prev[i + 1] = i;
	}
	for (uint32_t i = 0; i < 2 * n; i++)
		*(ev[i].call ? &call_node[ev[i].op] : &ret_node[ev[i].op]) = i + 1;
	for (uint32_t i = 0; i < n; i++)	/* a return recorded before its call: treat as concurrent */
		if (call_node[i] > ret_node[i]) {
			v = NTL_GAVE_UP;
			goto out;
		}
	memcpy(st, h->init, h->nobj * sizeof(st[0]));

	cur = next[head];
	while (next[head] != tail) {
		uint32_t node = cur, i;

		/* which op and kind is node? call_node/ret_node invert the order */
		i = ev[node - 1].op;
		if (ev[node - 1].call) {
			const struct ntl_op *op = &h->ops[i];
			bool wait = op->call.op == NTM_OP_WAIT_ANY || op->call.op == NTM_OP_WAIT_ALL;
			bool woken = wait && any_pulsed(st, h->nobj) && op->inv <= pres, taken = false;

			/*
			 * A wait in progress during a pulse may be woken by it, or
			 * not: variant 0 sees the pulse (only for a wait that began
			 * before the pulse returned), variant 1 does not.  The memo
			 * table keeps a variant from being tried twice here.
			 */
			/*
			 * WAIT_ANY may take any one of its signaled objects: the one
			 * it reported, or for a "whatever" call each in turn.
			 */
			uint32_t npick = 1, pick0 = UINT32_MAX;

			if (op->call.op == NTM_OP_WAIT_ANY) {
				if (op->whatever)
					npick = op->call.nobj + 2u, pick0 = 0;
				else if (op->ret.ret == 0 || op->ret.ret == -EOWNERDEAD)
					pick0 = op->ret.out[0];
			}
			for (uint32_t v = (woken ? 0 : npick); v < 2 * npick && !taken; v++) {
				uint32_t variant = v / npick, pick = pick0 == UINT32_MAX ? pick0 : pick0 + v % npick;
				struct ntm_obj tmp[NTL_MAX_OBJ];
				struct ntm_ret r;
				uint64_t npres = pres;
				int ins;

				memcpy(tmp, st, h->nobj * sizeof(st[0]));
				if (variant == 1)
					for (uint32_t k = 0; k < h->nobj; k++)
						tmp[k].pulsed = false;
				ntm_apply_pick(tmp, &op->call, pick, &r);
				ntm_settle(tmp, h->nobj, &op->call, &r);
				if (op->call.op == NTM_OP_EVENT_PULSE && r.ret == 0)
					npres = op->whatever ? UINT64_MAX : op->res;
				if (!any_pulsed(tmp, h->nobj))
					npres = 0;
				if (!op->whatever && !ntm_ret_equal(&op->call, &r, &op->ret))
					continue;
				lin[i / 64] |= 1ull << (i % 64);
				make_key(key, lin, nw, tmp, h->nobj, npres);
				ins = memo_insert(&memo, key);
				if (ins < 0)
					goto out;
				if (!ins) {
					lin[i / 64] &= ~(1ull << (i % 64));
					continue;
				}
				if (++*states > max_states)
					goto out;
				stack[depth].op = i;
				stack[depth].pres = pres;
				memcpy(stack[depth].st, st, h->nobj * sizeof(st[0]));
				depth++;
				memcpy(st, tmp, h->nobj * sizeof(st[0]));
				pres = npres;
				done += !op->whatever;
				taken = true;
			}
			if (!taken) {
				cur = next[cur];
				continue;
			}
			if (done == need)
				break;	/* the rest may never have happened */
			/* lift: take the call's two entries out of the list */
			next[prev[call_node[i]]] = next[call_node[i]];
			prev[next[call_node[i]]] = prev[call_node[i]];
			next[prev[ret_node[i]]] = next[ret_node[i]];
			prev[next[ret_node[i]]] = prev[ret_node[i]];
			cur = next[head];
		} else {
			/* a return reached: its call cannot be linearized later; back up */
			if (depth == 0) {
				v = NTL_VIOLATION;
				goto out;
			}
			depth--;
			i = stack[depth].op;
			done -= !h->ops[i].whatever;
			pres = stack[depth].pres;
			memcpy(st, stack[depth].st, h->nobj * sizeof(st[0]));
			lin[i / 64] &= ~(1ull << (i % 64));
			/* unlift, in the reverse order of the lift */
			next[prev[ret_node[i]]] = ret_node[i];
			prev[next[ret_node[i]]] = ret_node[i];
			next[prev[call_node[i]]] = call_node[i];
			prev[next[call_node[i]]] = call_node[i];
			/* the same call again: its other variant, if any, is still untried */
			cur = call_node[i];
		}
	}
	v = NTL_OK;
out:
	memo_free(&memo);
	free(ev);
	free(next);
	free(prev);
	free(call_node);
	free(ret_node);
	free(stack);
	return v;
}

/* ------------------------------------------------------------ partitions */

static uint32_t find(uint32_t *parent, uint32_t x)
{
	while (parent[x] != x)
		x = parent[x] = parent[parent[x]];
	return x;
}

static void for_each_object(const struct ntm_call *c, void (*fn)(void *, uint32_t), void *ctx)
{
	for (unsigned i = 0; i < c->nobj; i++)
		fn(ctx, (uint32_t)c->obj[i]);
	if ((c->op == NTM_OP_WAIT_ANY || c->op == NTM_OP_WAIT_ALL) && c->alert >= 0)
		fn(ctx, (uint32_t)c->alert);
}

struct unite_ctx { uint32_t *parent; int32_t first; };

static void unite(void *p, uint32_t o)
{
	struct unite_ctx *u = p;

	if (u->first < 0)
		u->first = (int32_t)o;
	else
		u->parent[find(u->parent, o)] = find(u->parent, (uint32_t)u->first);
}

/* Renumber a call's objects through map (old index -> new). */
static void remap_call(struct ntm_call *c, const int8_t *map)
{
	for (unsigned i = 0; i < c->nobj; i++)
		c->obj[i] = map[(uint8_t)c->obj[i]];
	if ((c->op == NTM_OP_WAIT_ANY || c->op == NTM_OP_WAIT_ALL) && c->alert >= 0)
		c->alert = map[(uint8_t)c->alert];
}

/* The calls of h that touch component comp (root), objects renumbered. */
static void extract(const struct ntl_history *h, uint32_t *parent, uint32_t comp, int32_t *op_comp,
		    struct ntl_history *out, struct ntl_op *ops)
{
	int8_t map[NTL_MAX_OBJ];

	out->nobj = 0;
	out->ops = ops;
	out->nops = 0;
	for (uint32_t o = 0; o < h->nobj; o++) {
		map[o] = -1;
		if (find(parent, o) == comp) {
			map[o] = (int8_t)out->nobj;
			out->init[out->nobj++] = h->init[o];
		}
	}
	for (uint32_t i = 0; i < h->nops; i++) {
		if (op_comp[i] != (int32_t)comp)
			continue;
		ops[out->nops] = h->ops[i];
		remap_call(&ops[out->nops].call, map);
		out->nops++;
	}
}

enum ntl_verdict ntl_check(const struct ntl_history *h, unsigned long max_states,
			   struct ntl_stats *st, struct ntl_history *bad, struct ntl_op *bad_ops)
{
	uint32_t parent[NTL_MAX_OBJ];
	int32_t op_comp[NTL_MAX_OPS];
	struct ntl_op *ops = NULL;
	enum ntl_verdict v = NTL_OK;
	uint64_t states = 0;
	bool done[NTL_MAX_OBJ] = { false };

	if (!max_states)
		max_states = 4000000;
	if (h->nops > NTL_MAX_OPS || h->nobj > NTL_MAX_OBJ)
		return NTL_GAVE_UP;
	if (st) {
		st->histories++;
		st->ops += h->nops;
	}
	for (uint32_t o = 0; o < h->nobj; o++)
		parent[o] = o;
	for (uint32_t i = 0; i < h->nops; i++) {
		struct unite_ctx u = { parent, -1 };

		for_each_object(&h->ops[i].call, unite, &u);
		op_comp[i] = u.first;
	}
	/* a call on no object at all (a wait on nothing): order does not matter */
	for (uint32_t i = 0; i < h->nops; i++) {
		if (op_comp[i] >= 0) {
			op_comp[i] = (int32_t)find(parent, (uint32_t)op_comp[i]);
			continue;
		}
		struct ntm_ret r;

		ntm_apply(NULL, &h->ops[i].call, &r);
		if (!ntm_ret_equal(&h->ops[i].call, &r, &h->ops[i].ret)) {
			v = NTL_VIOLATION;
			if (bad) {
				bad->nobj = 0;
				bad->nops = 1;
				bad->ops = bad_ops;
				bad_ops[0] = h->ops[i];
			}
			goto out;
		}
	}
	ops = malloc(NTL_MAX_OPS * sizeof(*ops));
	if (!ops)
		return NTL_GAVE_UP;
	for (uint32_t i = 0; i < h->nops; i++) {
		struct ntl_history part;
		enum ntl_verdict pv;
		uint32_t c;

		if (op_comp[i] < 0 || done[op_comp[i]])
			continue;
		c = (uint32_t)op_comp[i];
		done[c] = true;
		extract(h, parent, c, op_comp, &part, ops);
		if (st)
			st->parts++;
		pv = search(&part, max_states, &states);
		if (pv == NTL_VIOLATION) {
			v = NTL_VIOLATION;
			if (bad) {
				*bad = part;
				bad->ops = bad_ops;
				memcpy(bad_ops, part.ops, part.nops * sizeof(*ops));
			}
			break;
		}
		if (pv == NTL_GAVE_UP)
			v = NTL_GAVE_UP;
	}
out:
	free(ops);
	if (st) {
		st->states += states;
		st->violations += v == NTL_VIOLATION;
		st->gave_up += v == NTL_GAVE_UP;
	}
	return v;
}

/* ------------------------------------------------------------ shrinking */

/* Proven still not linearizable within budget states (a search that gives up proves nothing). */
static bool still_bad(const struct ntl_history *h, unsigned long budget)
{
	return ntl_check(h, budget, NULL, NULL, NULL) == NTL_VIOLATION;
}

static void drop_op(struct ntl_history *h, uint32_t i)
{
	memmove(&h->ops[i], &h->ops[i + 1], (h->nops - i - 1) * sizeof(h->ops[0]));
	h->nops--;
}

static void mark_used(void *p, uint32_t o)
{
	((bool *)p)[o] = true;
}

static void drop_unused_objects(struct ntl_history *h)
{
	bool used[NTL_MAX_OBJ] = { false };
	int8_t map[NTL_MAX_OBJ];
	uint32_t n = 0;

	for (uint32_t i = 0; i < h->nops; i++)
		for_each_object(&h->ops[i].call, mark_used, used);
	for (uint32_t o = 0; o < h->nobj; o++) {
		map[o] = -1;
		if (used[o]) {
			map[o] = (int8_t)n;
			h->init[n++] = h->init[o];
		}
	}
	h->nobj = n;
	for (uint32_t i = 0; i < h->nops; i++)
		remap_call(&h->ops[i].call, map);
}

uint32_t ntl_minimize(struct ntl_history *h)
{
	bool changed = true;

	if (!still_bad(h, 0))
		return h->nops;
	while (changed && h->nops > 1) {
		changed = false;
		/* a call before all others: it is first in every order */
		for (uint32_t i = 0; i < h->nops; i++) {
			bool first = true;

			for (uint32_t j = 0; j < h->nops && first; j++)
				first = !h->ops[i].whatever && (j == i || h->ops[i].res < h->ops[j].inv);
			if (!first)
				continue;
			struct ntm_obj st[NTL_MAX_OBJ];
			struct ntm_ret r;

			memcpy(st, h->init, sizeof(st));
			ntm_apply(st, &h->ops[i].call, &r);
			ntm_settle(st, h->nobj, &h->ops[i].call, &r);
			if (!ntm_ret_equal(&h->ops[i].call, &r, &h->ops[i].ret)) {
				h->ops[0] = h->ops[i];	/* impossible from the start: alone */
				h->nops = 1;
			} else {
				memcpy(h->init, st, sizeof(st));
				drop_op(h, i);
			}
			changed = true;
			break;
		}
		if (changed)
			continue;
		/* a call after all others, then calls that change nothing */
		for (int pass = 0; pass < 2 && !changed; pass++) {
			for (uint32_t i = h->nops; i-- > 0;) {
				struct ntl_op saved = h->ops[i];
				bool cand;

				if (h->ops[i].whatever) {
					cand = false;
				} else if (pass == 0) {
					cand = true;
					for (uint32_t j = 0; j < h->nops && cand; j++)
						cand = j == i || (!h->ops[j].whatever && h->ops[j].res < h->ops[i].inv);
				} else {
					cand = ntm_call_is_pure(h->init, &h->ops[i].call, &h->ops[i].ret);
				}
				if (!cand)
					continue;
				drop_op(h, i);
				if (still_bad(h, 0)) {
					changed = true;
					continue;
				}
				/* put it back */
				memmove(&h->ops[i + 1], &h->ops[i], (h->nops - i) * sizeof(h->ops[0]));
				h->ops[i] = saved;
				h->nops++;
			}
		}
	}
	/*
	 * What is left may be weakened, one call at a time.  Proving that a
	 * weakened history still fails means searching all of it, which grows
	 * with every call weakened, so each try gets a small budget: a try
	 * that runs out keeps the call as it was.
	 */
	for (uint32_t i = h->nops; i-- > 0;) {
		if (h->ops[i].whatever)
			continue;
		h->ops[i].whatever = 1;
		if (!still_bad(h, 20000))
			h->ops[i].whatever = 0;
	}
	/*
	 * A weakened call that began after every other call returned can go:
	 * whatever it did came after every result that matters.
	 */
	{
		uint64_t last = 0;

		for (uint32_t i = 0; i < h->nops; i++)
			if (!h->ops[i].whatever && h->ops[i].res > last)
				last = h->ops[i].res;
		for (uint32_t i = h->nops; i-- > 0;)
			if (h->ops[i].whatever && h->ops[i].inv > last)
				drop_op(h, i);
	}
	drop_unused_objects(h);
	{
		uint32_t core = 0;

		for (uint32_t i = 0; i < h->nops; i++)
			core += !h->ops[i].whatever;
		return core;
	}
}

/* ------------------------------------------------------------- printing */

void ntl_print_call(FILE *f, const struct ntm_call *c, const struct ntm_ret *r)
{
	bool acquired = r->ret == 0 || r->ret == -EOWNERDEAD;

	fprintf(f, "%s(", ntm_op_name(c->op));
	switch (c->op) {
	case NTM_OP_WAIT_ANY:
	case NTM_OP_WAIT_ALL:
		fprintf(f, "[");
		for (unsigned i = 0; i < c->nobj; i++)
			fprintf(f, "%so%d", i ? "," : "", c->obj[i]);
		fprintf(f, "]");
		if (c->alert >= 0)
			fprintf(f, ", alert o%d", c->alert);
		fprintf(f, ", owner %u) = %s", c->arg, ntm_errname(r->ret));
		if (acquired)
			fprintf(f, ", index %u", r->out[0]);
		break;
	case NTM_OP_SEM_RELEASE:
		fprintf(f, "o%d, %u) = %s", c->obj[0], c->arg, ntm_errname(r->ret));
		if (!r->ret)
			fprintf(f, ", previous count %u", r->out[0]);
		break;
	case NTM_OP_MUTEX_UNLOCK:
		fprintf(f, "o%d, owner %u) = %s", c->obj[0], c->arg, ntm_errname(r->ret));
		if (!r->ret)
			fprintf(f, ", previous count %u", r->out[0]);
		break;
	case NTM_OP_MUTEX_KILL:
		fprintf(f, "o%d, owner %u) = %s", c->obj[0], c->arg, ntm_errname(r->ret));
		break;
	case NTM_OP_EVENT_SET:
	case NTM_OP_EVENT_RESET:
	case NTM_OP_EVENT_PULSE:
		fprintf(f, "o%d) = %s", c->obj[0], ntm_errname(r->ret));
		if (!r->ret)
			fprintf(f, ", previous state %u", r->out[0]);
		break;
	case NTM_OP_SEM_READ:
		fprintf(f, "o%d) = %s {count %u, max %u}", c->obj[0], ntm_errname(r->ret), r->out[0], r->out[1]);
		break;
	case NTM_OP_MUTEX_READ:
		fprintf(f, "o%d) = %s {owner %u, count %u}", c->obj[0], ntm_errname(r->ret), r->out[0], r->out[1]);
		break;
	case NTM_OP_EVENT_READ:
		fprintf(f, "o%d) = %s {manual %u, signaled %u}", c->obj[0], ntm_errname(r->ret), r->out[0], r->out[1]);
		break;
	default:
		fprintf(f, "?)");
	}
}

/* The call alone, without a result. */
static void ntm_apply_name(FILE *f, const struct ntm_call *c)
{
	struct ntm_ret none = { -EINVAL, { 0, 0 } };
	char buf[256];
	FILE *m = fmemopen(buf, sizeof(buf), "w");
	char *eq;

	if (!m)
		return;
	ntl_print_call(m, c, &none);
	fclose(m);
	eq = strstr(buf, ") = ");
	if (eq)
		eq[1] = 0;
	fputs(buf, f);
}

static int cmp_inv(const void *a, const void *b)
{
	const struct ntl_op *x = *(const struct ntl_op *const *)a, *y = *(const struct ntl_op *const *)b;

	return x->inv < y->inv ? -1 : x->inv > y->inv;
}

void ntl_print(FILE *f, const struct ntl_history *h, const char *indent)
{
	const struct ntl_op *by_inv[NTL_MAX_OPS];
	uint64_t t0 = UINT64_MAX;
	uint32_t whatever = 0;
	char buf[80];

	for (uint32_t o = 0; o < h->nobj; o++)
		fprintf(f, "%so%u = %s\n", indent, o, ntm_fmt_obj(buf, sizeof(buf), &h->init[o]));
	for (uint32_t i = 0; i < h->nops && i < NTL_MAX_OPS; i++) {
		by_inv[i] = &h->ops[i];
		if (h->ops[i].inv < t0)
			t0 = h->ops[i].inv;
	}
	qsort(by_inv, h->nops, sizeof(by_inv[0]), cmp_inv);
	for (uint32_t i = 0; i < h->nops; i++) {
		const struct ntl_op *op = by_inv[i];

		whatever += op->whatever;
		fprintf(f, "%s%sthread %-3u [%10.3f, %10.3f] us  ", indent, op->whatever ? "~ " : "  ", op->thread,
			(op->inv - t0) / 1e3, (op->res - t0) / 1e3);
		if (op->whatever) {
			ntm_apply_name(f, &op->call);
			fputc('\n', f);
			continue;
		}
		ntl_print_call(f, &op->call, &op->ret);
		fputc('\n', f);
	}
	if (whatever)
		fprintf(f, "%s(~: %u calls whose results do not matter: the violation stands whatever they returned,\n"
			"%s whenever after their start they took effect, and whether they did at all)\n",
			indent, whatever, indent);
}
