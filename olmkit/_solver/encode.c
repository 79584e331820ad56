/*
 * Native hot path of olmkit's SAT layer: clause encoding and the preference search.
 *
 * This file has a pure-Python twin, olmkit/_solver/_pure.py, whose docstrings describe
 * the data layout and the algorithms. Both must give identical output: the same clause
 * buffers, byte for byte, and the same guesses in the same order. Change them together.
 *
 * Built with cffi (out-of-line API mode) by _speedups_build.py. Memory errors are
 * reported as return codes (-2 / NULL); the Python wrapper raises MemoryError.
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
#include <unistd.h>
#endif
#include "encode.h"

enum { MANDATORY = 1, PROHIBITED, DEPENDENCY, CONFLICT, ATMOST, OR, AND, NOT };
enum { UNKNOWN = 0, SAT = 1, UNSAT = -1 };
enum { PROOF_BUDGET = 1000 };  /* backtracks completes() may spend to find a model */

/* ---------------------------------------------------------------- int buffer */

typedef struct {
    int *data;
    size_t len, cap;
    int oom;
} ibuf;

static int ibuf_reserve(ibuf *b, size_t extra) {
    if (b->len + extra <= b->cap) return 1;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + extra) cap *= 2;
    int *d = realloc(b->data, cap * sizeof(int));
    if (!d) { b->oom = 1; return 0; }
    b->data = d;
    b->cap = cap;
    return 1;
}

static inline void ibuf_push(ibuf *b, int v) {
    if (b->len == b->cap && !ibuf_reserve(b, 1)) return;
    b->data[b->len++] = v;
}

/* ---------------------------------------------------------------- encoding */

typedef struct {
    const int *nodes, *args;
    ibuf out;
    int top_var, true_var;
} encoder;

static inline int new_var(encoder *e) { return ++e->top_var; }

static void cl2(encoder *e, int a, int b) {
    if (!ibuf_reserve(&e->out, 3)) return;
    int *d = e->out.data + e->out.len;
    d[0] = a; d[1] = b; d[2] = 0;
    e->out.len += 3;
}

static void cl3(encoder *e, int a, int b, int c) {
    if (!ibuf_reserve(&e->out, 4)) return;
    int *d = e->out.data + e->out.len;
    d[0] = a; d[1] = b; d[2] = c; d[3] = 0;
    e->out.len += 4;
}

static int enc_true(encoder *e) {
    if (!e->true_var) {
        e->true_var = new_var(e);
        ibuf_push(&e->out, e->true_var);
        ibuf_push(&e->out, 0);
    }
    return e->true_var;
}

static void atmost_top(encoder *e, int act, const int *xs, int m, int n) {
    if (n >= m) return;
    if (n == 0) {
        for (int i = 0; i < m; i++) cl2(e, -act, -xs[i]);
        return;
    }
    int base = e->top_var + 1;
    e->top_var += (m - 1) * n;
#define S(i, j) (base + (i) * n + (j))
    for (int i = 0; i < m - 1; i++) {
        int x = xs[i];
        cl2(e, -x, S(i, 0));
        if (i > 0) {
            for (int j = 0; j < n; j++) cl2(e, -S(i - 1, j), S(i, j));
            for (int j = 1; j < n; j++) cl3(e, -x, -S(i - 1, j - 1), S(i, j));
            cl3(e, -act, -x, -S(i - 1, n - 1));
        }
    }
    cl3(e, -act, -xs[m - 1], -S(m - 2, n - 1));
#undef S
}

static int atmost_full(encoder *e, const int *xs, int m, int n) {
    if (n >= m) return enc_true(e);
    int t = enc_true(e);
    int width = n + 1;
    int base = e->top_var + 1;
    e->top_var += m * width;
    for (int i = 0; i < m; i++) {
        int x = xs[i];
        for (int j = 0; j < width; j++) {
            int r = base + i * width + j;
            int a = i > 0 ? base + (i - 1) * width + j : -t;
            int c = j == 0 ? t : (i > 0 ? base + (i - 1) * width + j - 1 : -t);
            cl2(e, -a, r);
            cl3(e, -x, -c, r);
            cl3(e, -r, a, x);
            cl3(e, -r, a, c);
        }
    }
    return -(base + (m - 1) * width + n);
}

static int literal(encoder *e, int node) {
    const int *nd = e->nodes + 5 * (size_t)node;
    int kind = nd[0], x = nd[1], len = nd[4];
    const int *ops = e->args + nd[3];
    int g;
    switch (kind) {
    case MANDATORY:
        return x;
    case PROHIBITED:
        return -x;
    case DEPENDENCY:
        if (len == 0) return -x;
        g = new_var(e);
        if (!ibuf_reserve(&e->out, (size_t)len + 3)) return g;
        ibuf_push(&e->out, -g);
        ibuf_push(&e->out, -x);
        for (int i = 0; i < len; i++) ibuf_push(&e->out, ops[i]);
        ibuf_push(&e->out, 0);
        cl2(e, g, x);
        for (int i = 0; i < len; i++) cl2(e, g, -ops[i]);
        return g;
    case CONFLICT:
        g = new_var(e);
        cl3(e, -g, -x, -ops[0]);
        cl2(e, g, x);
        cl2(e, g, ops[0]);
        return g;
    case ATMOST:
        return atmost_full(e, ops, len, nd[2]);
    case NOT:
        return -literal(e, ops[0]);
    default:
        break;
    }
    /* OR / AND */
    int *lits = malloc(((size_t)len + 1) * sizeof(int));
    if (!lits) { e->out.oom = 1; return 1; }
    for (int i = 0; i < len; i++) lits[i] = literal(e, ops[i]);
    if (kind == OR) {
        if (len == 0) { free(lits); return -enc_true(e); }
        g = new_var(e);
        ibuf_push(&e->out, -g);
        for (int i = 0; i < len; i++) ibuf_push(&e->out, lits[i]);
        ibuf_push(&e->out, 0);
        for (int i = 0; i < len; i++) cl2(e, g, -lits[i]);
    } else {
        if (len == 0) { free(lits); return enc_true(e); }
        g = new_var(e);
        ibuf_push(&e->out, g);
        for (int i = 0; i < len; i++) ibuf_push(&e->out, -lits[i]);
        ibuf_push(&e->out, 0);
        for (int i = 0; i < len; i++) cl2(e, -g, lits[i]);
    }
    free(lits);
    return g;
}

int olm_encode(int n_vars, const int *nodes, const int *args, const int *top, int n_act,
               int **out, size_t *out_len, int *top_var) {
    encoder e;
    memset(&e, 0, sizeof e);
    e.nodes = nodes;
    e.args = args;
    e.top_var = n_vars + n_act;
    ibuf_reserve(&e.out, (size_t)n_act * 4 + 16);
    for (int j = 0; j < n_act; j++) {
        int act = n_vars + 1 + j;
        const int *nd = nodes + 5 * (size_t)top[j];
        int kind = nd[0], x = nd[1], len = nd[4];
        const int *ops = args + nd[3];
        switch (kind) {
        case MANDATORY:
            cl2(&e, -act, x);
            break;
        case PROHIBITED:
            cl2(&e, -act, -x);
            break;
        case DEPENDENCY:
            if (!ibuf_reserve(&e.out, (size_t)len + 3)) break;
            e.out.data[e.out.len++] = -act;
            e.out.data[e.out.len++] = -x;
            memcpy(e.out.data + e.out.len, ops, (size_t)len * sizeof(int));
            e.out.len += len;
            e.out.data[e.out.len++] = 0;
            break;
        case CONFLICT:
            cl3(&e, -act, -x, -ops[0]);
            break;
        case ATMOST:
            atmost_top(&e, act, ops, len, nd[2]);
            break;
        default:
            cl2(&e, -act, literal(&e, top[j]));
            break;
        }
        if (e.out.oom) break;
    }
    if (e.out.oom) {
        free(e.out.data);
        return -2;
    }
    *out = e.out.data;
    *out_len = e.out.len;
    *top_var = e.top_var;
    return 0;
}

int olm_encode_counter(int first_var, const int *lits, int k, int **out, size_t *out_len,
                       int *outs, int *top_var) {
    ibuf b;
    memset(&b, 0, sizeof b);
    ibuf_reserve(&b, (size_t)k * (size_t)k * 7 + 8);
    int base = first_var;
#define S(i, j) (base + (i) * k + (j))
    for (int i = 0; i < k && !b.oom; i++) {
        int x = lits[i];
        ibuf_push(&b, -x); ibuf_push(&b, S(i, 0)); ibuf_push(&b, 0);
        if (i > 0) {
            for (int j = 0; j < k; j++) {
                ibuf_push(&b, -S(i - 1, j)); ibuf_push(&b, S(i, j)); ibuf_push(&b, 0);
            }
            for (int j = 1; j < k; j++) {
                ibuf_push(&b, -x); ibuf_push(&b, -S(i - 1, j - 1)); ibuf_push(&b, S(i, j));
                ibuf_push(&b, 0);
            }
        }
    }
    for (int w = 0; w < k; w++) outs[w] = -S(k - 1, w);
#undef S
    if (b.oom) {
        free(b.data);
        return -2;
    }
    *out = b.data;
    *out_len = b.len;
    *top_var = first_var + k * k - 1;
    return 0;
}

void olm_free(void *p) { free(p); }

/* ---------------------------------------------------------------- propagator */

/* A watch list, 8 bytes per literal (there are two per variable, most of them short):
 * `len` >= 0: its `len` clauses are at `wblock + off`, where its share ends at the next
 * list's `off` (the lists' shares are in literal order, and `off` never changes);
 * `len` < 0: it outgrew its share and lives in `wown[-len - 1]`: its length, its
 * capacity, then its clauses. */
typedef struct {
    int off, len;
} wlist;

/* orig: the index the choice had when the guesses it is decided under were made */
typedef struct { int start, len, index, owner, orig; } choice;
typedef struct { int m, index, children, start, len, owner, lvl, orig; } guess;

struct olm_searcher {
    int n_vars, n_total, n_act;
    const int *nodes, *args, *vdep_start, *vdep;
    signed char *val;           /* 0 unassigned, 1 true, -1 false */
    int *lits;                  /* clause literals, watched ones first */
    int lits_borrowed;          /* lits is the caller's clause buffer */
    int *cstart;                /* clause c's literals: lits[cstart[c] .. cstart[c + 1]) */
    int cstart_borrowed;        /* cstart is in the borrowed clause buffer, after the literals */
    int n_clauses;
    long long n_input;          /* clauses in the buffer, units and tautologies included */
    wlist *watches;             /* per literal index: clauses watching it (and a last: the end) */
    int **wown;                 /* the watch lists that outgrew their share of `wblock` */
    int n_wown, wown_cap;
    int *trail, trail_len, qhead;
    int *trail_lim, n_levels;
    unsigned char *assumed;
    choice *q;                  /* ring buffer deque */
    int q_head, q_len, q_cap;
    guess *guesses;
    int n_guesses_stack, guesses_cap;
    int result, backjump, awaiting, done, root_unsat, oom;
    int units_unsat, empty_clause, units_end;
    unsigned char *model, *mark;
    int *reason, *level;        /* per variable: implying clause (-1 decision, -2 root), level */
    int *wblock;                /* the watch lists' first storage, sized by load() */
    size_t wblock_len;
    int conflict;               /* the clause propagate() found false */
    int *seen_list, *lvl_pos;   /* scratch of prove() */
    int proofs;                 /* whether failed completions try prove() before the backend */
    int ask_level;              /* pending question: -1 all the guesses, else the first n */
    int shorten_from;           /* > 0: the guesses up to this level cannot hold; shorten */
    long long n_guesses, n_backtracks, n_propagations, n_solver_calls, n_proofs;
};

static inline int lidx(int lit) { return lit > 0 ? 2 * lit : -2 * lit + 1; }

static inline int lval(const olm_searcher *s, int lit) {
    int v = s->val[lit > 0 ? lit : -lit];
    return lit > 0 ? v : -v;
}

static inline int enqueue_r(olm_searcher *s, int lit, int reason) {
    int v = lval(s, lit);
    if (v) return v > 0;
    int var = lit > 0 ? lit : -lit;
    s->val[var] = lit > 0 ? 1 : -1;
    s->reason[var] = reason;
    s->level[var] = s->n_levels;
    s->trail[s->trail_len++] = lit;
    s->n_propagations++;
    return 1;
}

static inline int enqueue(olm_searcher *s, int lit) { return enqueue_r(s, lit, -1); }

/* add clause c to literal index i's watch list (moving the list out of its share when full) */
static int wpush(olm_searcher *s, size_t i, int c) {
    wlist *w = &s->watches[i];
    if (w->len >= 0) {
        int len = w->len, cap = s->watches[i + 1].off - w->off;
        if (len < cap) {
            s->wblock[w->off + len] = c;
            w->len = len + 1;
            return 1;
        }
        if (s->n_wown == s->wown_cap) {
            int n = s->wown_cap ? 2 * s->wown_cap : 64;
            int **t = realloc(s->wown, (size_t)n * sizeof(int *));
            if (!t) { s->oom = 1; return 0; }
            s->wown = t;
            s->wown_cap = n;
        }
        int ncap = cap ? cap * 2 : 4;
        int *d = malloc(((size_t)ncap + 2) * sizeof(int));
        if (!d) { s->oom = 1; return 0; }
        d[0] = len;
        d[1] = ncap;
        if (len) memcpy(d + 2, s->wblock + w->off, (size_t)len * sizeof(int));
        s->wown[s->n_wown] = d;
        w->len = -(++s->n_wown);
    }
    int k = -w->len - 1, *d = s->wown[k];
    if (d[0] == d[1]) {
        int ncap = d[1] * 2;
        d = realloc(d, ((size_t)ncap + 2) * sizeof(int));
        if (!d) { s->oom = 1; return 0; }
        d[1] = ncap;
        s->wown[k] = d;
    }
    d[2 + d[0]++] = c;
    return 1;
}

static int propagate(olm_searcher *s) {
    int *lits = s->lits;
    while (s->qhead < s->trail_len) {
        int fl = -s->trail[s->qhead++];
        size_t wi = (size_t)lidx(fl);
        int wl = s->watches[wi].len;
        /* (wpush below adds to other lists only: it may move s->wown, never this list's data) */
        int *ws = wl >= 0 ? s->wblock + s->watches[wi].off : s->wown[-wl - 1] + 2;
        int n = wl >= 0 ? wl : s->wown[-wl - 1][0], i = 0, j = 0;
        while (i < n) {
            int c = ws[i++];
            int *cl = lits + s->cstart[c];
            if (cl[0] == fl) { cl[0] = cl[1]; cl[1] = fl; }
            int first = cl[0];
            int fv = lval(s, first);
            if (fv > 0) { ws[j++] = c; continue; }
            int len = s->cstart[c + 1] - s->cstart[c], k;
            for (k = 2; k < len; k++) {
                if (lval(s, cl[k]) >= 0) {
                    int lit = cl[k];
                    cl[1] = lit;
                    cl[k] = fl;
                    if (!wpush(s, (size_t)lidx(lit), c)) return 0;
                    break;
                }
            }
            if (k < len) continue;
            ws[j++] = c;
            if (fv < 0) {
                while (i < n) ws[j++] = ws[i++];
                if (wl >= 0) s->watches[wi].len = j; else s->wown[-wl - 1][0] = j;
                s->qhead = s->trail_len;
                s->conflict = c;
                return 0;
            }
            enqueue_r(s, first, c);
        }
        if (wl >= 0) s->watches[wi].len = j; else s->wown[-wl - 1][0] = j;
    }
    return 1;
}

static inline void new_level(olm_searcher *s) { s->trail_lim[s->n_levels++] = s->trail_len; }

static void undo_level(olm_searcher *s) {
    int mark = s->trail_lim[--s->n_levels];
    for (int i = mark; i < s->trail_len; i++) {
        int lit = s->trail[i];
        s->val[lit > 0 ? lit : -lit] = 0;
    }
    s->trail_len = mark;
    s->qhead = mark;
}

static inline int assume(olm_searcher *s, int lit) { return enqueue(s, lit) && propagate(s); }

/* ---------------------------------------------------------------- deque */

static int q_grow(olm_searcher *s) {
    int cap = s->q_cap ? s->q_cap * 2 : 64;
    choice *d = malloc((size_t)cap * sizeof(choice));
    if (!d) { s->oom = 1; return 0; }
    for (int i = 0; i < s->q_len; i++) d[i] = s->q[(s->q_head + i) % s->q_cap];
    free(s->q);
    s->q = d;
    s->q_cap = cap;
    s->q_head = 0;
    return 1;
}

static int q_push_back(olm_searcher *s, choice c) {
    if (s->q_len == s->q_cap && !q_grow(s)) return 0;
    s->q[(s->q_head + s->q_len) % s->q_cap] = c;
    s->q_len++;
    return 1;
}

static int q_push_front(olm_searcher *s, choice c) {
    if (s->q_len == s->q_cap && !q_grow(s)) return 0;
    s->q_head = (s->q_head + s->q_cap - 1) % s->q_cap;
    s->q[s->q_head] = c;
    s->q_len++;
    return 1;
}

static choice q_pop_front(olm_searcher *s) {
    choice c = s->q[s->q_head];
    s->q_head = (s->q_head + 1) % s->q_cap;
    s->q_len--;
    return c;
}

static void q_pop_back(olm_searcher *s) { s->q_len--; }

/* ---------------------------------------------------------------- searcher */

void olm_searcher_free(olm_searcher *s) {
    if (!s) return;
    for (int i = 0; i < s->n_wown; i++) free(s->wown[i]);
    free(s->wown);
    free(s->watches);
    free(s->wblock);
    free(s->val);
    if (!s->lits_borrowed) free(s->lits);
    if (!s->cstart_borrowed) free(s->cstart);
    free(s->trail);
    free(s->trail_lim);
    free(s->assumed);
    free(s->q);
    free(s->guesses);
    free(s->model);
    free(s->mark);
    free(s->reason);
    free(s->level);
    free(s->seen_list);
    free(s->lvl_pos);
    free(s);
}

/* Give the whole pages of [from, to) (a part of a live allocation no longer read) back to
 * the system: a consumed clause buffer is compacted in place, and its tail (the clause
 * terminators, units and repeated literals it no longer holds) would stay resident for
 * the whole search otherwise. The pages stay mapped (reading them gives zeros). */
static void release_tail(int *from, int *to) {
#if defined(MADV_DONTNEED) && (defined(__unix__) || defined(__APPLE__))
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0) return;
    uintptr_t lo = ((uintptr_t)from + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
    uintptr_t hi = (uintptr_t)to & ~((uintptr_t)page - 1);
    if (hi > lo) madvise((void *)lo, hi - lo, MADV_DONTNEED);
#else
    (void)from;
    (void)to;
#endif
}

static int load(olm_searcher *s, int *clauses, size_t n) {
    int N = s->n_total;
    int *stamp = calloc((size_t)N + 1, sizeof(int));
    unsigned char *sign = calloc((size_t)N + 1, 1);
    int *units = malloc((n + 1) * sizeof(int));
    size_t n_clauses = 0;
    for (size_t i = 0; i < n; i++) n_clauses += clauses[i] == 0;
    s->n_input = (long long)n_clauses;
    s->lits = s->lits_borrowed ? clauses : malloc((n + 1) * sizeof(int));
    s->cstart = malloc((n_clauses + 1) * sizeof(int));
    if (!stamp || !sign || !units || !s->lits || !s->cstart) {
        free(stamp); free(sign); free(units);
        return 0;
    }
    int n_units = 0, cid = 0, taut = 0, nl = 0, clause_start = 0;
    for (size_t i = 0; i < n; i++) {
        int lit = clauses[i];
        if (lit) {
            int v = lit > 0 ? lit : -lit;
            unsigned char neg = lit < 0;
            if (stamp[v] == cid + 1) {
                if (sign[v] != neg) taut = 1;
                continue;
            }
            stamp[v] = cid + 1;
            sign[v] = neg;
            s->lits[nl++] = lit;
            continue;
        }
        int len = nl - clause_start;
        if (taut) {
            nl = clause_start;
        } else if (len == 0) {
            s->root_unsat = 1;
            s->empty_clause = 1;
        } else if (len == 1) {
            units[n_units++] = s->lits[clause_start];
            nl = clause_start;
        } else {
            int c = s->n_clauses++;
            s->cstart[c] = clause_start;
            s->watches[lidx(s->lits[clause_start])].len++;  /* counted here, placed below */
            s->watches[lidx(s->lits[clause_start + 1])].len++;
        }
        clause_start = nl;
        cid++;
        taut = 0;
    }
    s->cstart[s->n_clauses] = nl;
    free(stamp);
    free(sign);
    if (s->lits_borrowed) {
        /* the compacted buffer's tail holds the clause starts when they fit (they do unless
         * no clause was a unit, a tautology or had a repeated literal); the rest goes back */
        int *tail = s->lits + nl;
        size_t need = (size_t)s->n_clauses + 1;
        if (n - (size_t)nl >= need) {
            memcpy(tail, s->cstart, need * sizeof(int));
            free(s->cstart);
            s->cstart = tail;
            s->cstart_borrowed = 1;
            tail += need;
        }
        release_tail(tail, s->lits + n);
    }
    /* each watch list starts in one shared block, as long as its clauses (wpush moves a
     * list that outgrows it) */
    size_t n_lists = 2 * (size_t)N + 2, total = 2 * (size_t)s->n_clauses;
    if (total > INT_MAX) {
        free(units);
        return 0;
    }
    total = 0;
    for (size_t i = 0; i < n_lists; i++) {
        s->watches[i].off = (int)total;  /* (at most 2 * n_clauses: an int) */
        total += (size_t)s->watches[i].len;
        s->watches[i].len = 0;
    }
    s->watches[n_lists].off = (int)total;
    s->wblock = malloc((total + 1) * sizeof(int));
    if (!s->wblock) {
        free(units);
        return 0;
    }
    s->wblock_len = total;
    for (int c = 0; c < s->n_clauses; c++) {
        const int *cl = s->lits + s->cstart[c];
        wlist *a = &s->watches[lidx(cl[0])], *b = &s->watches[lidx(cl[1])];
        s->wblock[a->off + a->len++] = c;
        s->wblock[b->off + b->len++] = c;
    }
    for (int i = 0; i < n_units; i++)
        if (!enqueue_r(s, units[i], -2)) s->units_unsat = 1;
    free(units);
    if (s->units_unsat) s->root_unsat = 1;
    s->units_end = s->trail_len;
    for (int v = s->n_vars + 1; v <= s->n_vars + s->n_act; v++)
        if (!enqueue_r(s, v, -2)) s->root_unsat = 1;
    if (!s->root_unsat && !propagate(s)) s->root_unsat = 1;
    return !s->oom;
}

olm_searcher *olm_searcher_new(int n_vars, int n_total, int *clauses, size_t n_clause_ints,
                               int n_act, const int *nodes, const int *args, int anchor_start,
                               int n_anchors, const int *vdep_start, const int *vdep, int proofs,
                               int consume) {
    olm_searcher *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    /* consume: the clause buffer becomes `lits` (compacted in place: each literal kept is
     * written at or before where it was read), which the caller keeps alive */
    s->lits_borrowed = consume && clauses;
    s->proofs = proofs;
    s->ask_level = -1;
    s->n_vars = n_vars;
    s->n_total = n_total;
    s->n_act = n_act;
    s->nodes = nodes;
    s->args = args;
    s->vdep_start = vdep_start;
    s->vdep = vdep;
    s->backjump = -1;
    s->val = calloc((size_t)n_total + 1, 1);
    s->watches = calloc(2 * (size_t)n_total + 3, sizeof(wlist));
    s->trail = malloc(((size_t)n_total + 1) * sizeof(int));
    s->trail_lim = malloc(((size_t)n_total + 3) * sizeof(int));
    s->assumed = calloc((size_t)n_vars + 1, 1);
    s->model = calloc((size_t)n_vars + 1, 1);
    s->mark = calloc((size_t)n_total + 1, 1);
    s->reason = malloc(((size_t)n_total + 1) * sizeof(int));
    s->level = malloc(((size_t)n_total + 1) * sizeof(int));
    s->seen_list = malloc(((size_t)n_total + 1) * sizeof(int));
    s->lvl_pos = malloc(((size_t)n_total + 3) * sizeof(int));
    s->conflict = -1;
    if (!s->val || !s->watches || !s->trail || !s->trail_lim || !s->assumed || !s->model ||
        !s->mark || !s->reason || !s->level || !s->seen_list || !s->lvl_pos ||
        !load(s, clauses, n_clause_ints)) {
        olm_searcher_free(s);
        return NULL;
    }
    for (int i = 0; i < n_anchors; i++) {
        choice c = {anchor_start + i, 1, 0, 0, 0};
        if (!q_push_back(s, c)) { olm_searcher_free(s); return NULL; }
    }
    return s;
}

static int push_guess(olm_searcher *s) {
    choice c = q_pop_front(s);
    const int *args = s->args;
    int m = c.index < c.len ? args[c.start + c.index] : 0;
    for (int t = c.start; t < c.start + c.len; t++)
        if (s->assumed[args[t]]) { m = 0; break; }
    int children = 0, lvl = s->n_levels;
    if (m) {
        for (int t = s->vdep_start[m - 1]; t < s->vdep_start[m]; t++) {
            const int *nd = s->nodes + 5 * (size_t)s->vdep[t];
            choice d = {nd[3], nd[4], 0, m, 0};
            if (!q_push_back(s, d)) return 0;
            children++;
        }
        s->assumed[m] = 1;
        s->n_guesses++;
        new_level(s);
        s->result = assume(s, m) ? UNKNOWN : UNSAT;
        if (s->oom) return 0;
    }
    if (s->n_guesses_stack == s->guesses_cap) {
        int cap = s->guesses_cap ? s->guesses_cap * 2 : 64;
        guess *d = realloc(s->guesses, (size_t)cap * sizeof(guess));
        if (!d) { s->oom = 1; return 0; }
        s->guesses = d;
        s->guesses_cap = cap;
    }
    guess g = {m, c.index, children, c.start, c.len, c.owner, lvl, c.orig};
    s->guesses[s->n_guesses_stack++] = g;
    return 1;
}

/* Undo the newest guess; its choice goes back to the front of the deque, on to its next
 * candidate, or (`restore`: a guess newer than a backjump's target) as it was when the
 * guesses it was decided under were made, as if the bad guess had been refuted at once. */
static int pop_guess(olm_searcher *s, int restore) {
    guess g = s->guesses[--s->n_guesses_stack];
    s->n_backtracks++;
    if (g.m) {
        s->assumed[g.m] = 0;
        while (s->n_levels > g.lvl) undo_level(s); /* prove() may have undone it already */
        s->result = UNKNOWN;
        g.index++;
    }
    if (restore) g.index = g.orig;
    for (int i = 0; i < g.children; i++) q_pop_back(s);
    choice c = {g.start, g.len, g.index, g.owner, g.orig};
    return q_push_front(s, c);
}

/* Set every open variable false in order; keep the model (and the level) on success. */
static int complete(olm_searcher *s) {
    new_level(s);
    for (int v = 1; v <= s->n_total; v++) {
        if (!s->val[v] && !assume(s, -v)) {
            undo_level(s);
            return 0;
        }
    }
    for (int v = 1; v <= s->n_vars; v++) s->model[v - 1] = s->val[v] == 1;
    return 1;
}

/* Whether the assignment extends to a model, found by a small depth-first search: open
 * variables in order, false first, chronological backtracking, at most `budget`
 * backtracks. Only ever a proof of satisfiability (the search's own completion is
 * complete()); the assignment is left as it was. */
static int completes(olm_searcher *s, int budget) {
    int base = s->n_levels, v = 1, found = 0;
    int *dec = s->seen_list;  /* decision variable per level above base (phase: sign) */
    for (;;) {
        while (v <= s->n_total && s->val[v]) v++;
        if (v > s->n_total) { found = 1; break; }
        new_level(s);
        if (assume(s, -v)) { dec[s->n_levels - base - 1] = -v; continue; }
        undo_level(s);
        new_level(s);
        if (assume(s, v)) { dec[s->n_levels - base - 1] = v; continue; }
        undo_level(s);
        /* backtrack to the newest decision still at its first (false) phase */
        int resumed = 0;
        while (s->n_levels > base && budget-- > 0) {
            int d = dec[s->n_levels - base - 1];
            undo_level(s);
            if (d < 0) {
                new_level(s);
                if (assume(s, -d)) {
                    dec[s->n_levels - base - 1] = -d;
                    v = -d + 1;
                    resumed = 1;
                    break;
                }
                undo_level(s);
            }
        }
        if (!resumed) break;
        if (s->oom) break;
    }
    while (s->n_levels > base) undo_level(s);
    return found && !s->oom;
}

/* ---------------------------------------------------------------- conflict proofs */

/* Mark the variables of clause c (above the root level) except `skip`. */
static void mark_clause(olm_searcher *s, int c, int skip, int *n_seen, int *pending) {
    const int *cl = s->lits + s->cstart[c];
    for (int k = 0, len = s->cstart[c + 1] - s->cstart[c]; k < len; k++) {
        int v = cl[k] > 0 ? cl[k] : -cl[k];
        if (v != skip && s->level[v] > 0 && !s->mark[v]) {
            s->mark[v] = 1;
            s->seen_list[(*n_seen)++] = v;
            (*pending)++;
        }
    }
}

/* Walk the implication graph back from the marked variables; return the highest level
 * of a decision among them other than `level_skip` (or 0); the marks are cleared. */
static int newest_decision(olm_searcher *s, int n_seen, int pending, int level_skip) {
    int top = 0;
    for (int i = s->trail_len - 1; i >= 0 && pending > 0; i--) {
        int lit = s->trail[i], v = lit > 0 ? lit : -lit;
        if (!s->mark[v]) continue;
        pending--;
        if (s->reason[v] == -1) {
            if (s->level[v] != level_skip && s->level[v] > top) top = s->level[v];
        } else if (s->reason[v] >= 0) {
            mark_clause(s, s->reason[v], v, &n_seen, &pending);
        }
    }
    for (int i = 0; i < n_seen; i++) s->mark[s->seen_list[i]] = 0;
    return top;
}

/* Put the assignment at the first k guesses' levels (undoing, or assuming again the
 * guesses whose levels an earlier step undid; that propagation cannot fail). */
static void levels_to(olm_searcher *s, int k) {
    while (s->n_levels > k) undo_level(s);
    for (int p = 0; p < s->n_guesses_stack && s->n_levels < k; p++) {
        guess g = s->guesses[p];
        if (g.m && g.lvl == s->n_levels) {
            new_level(s);
            assume(s, g.m);
        }
    }
}

/* Level -> position in the guess stack, for the real guesses (level k: the k-th one). */
static void level_positions(olm_searcher *s) {
    int n = 0;
    for (int p = 0; p < s->n_guesses_stack; p++)
        if (s->guesses[p].m) s->lvl_pos[++n] = p;
}

static int real_guesses(const olm_searcher *s) {
    int n = 0;
    for (int p = 0; p < s->n_guesses_stack; p++) n += s->guesses[p].m != 0;
    return n;
}

/* After a failed completion: try to show by propagation alone that the guesses cannot
 * all hold, through a choice that ran out of candidates (under the guesses before it,
 * every candidate is false or fails by propagation). Return the level of the newest
 * guess the proof needs, or -1 (assignment as it was) when there is no such proof. */
static int prove(olm_searcher *s) {
    for (int p = 0; p < s->n_guesses_stack; p++) {
        guess g = s->guesses[p];
        if (g.m || g.index < g.len) continue;
        int satisfied = 0;
        for (int t = g.start; t < g.start + g.len; t++)
            if (s->assumed[s->args[t]]) satisfied = 1;
        if (satisfied) continue;
        /* the state right after the guesses before the choice (one level each) */
        int before = 0;
        for (int q = 0; q < p; q++) before += s->guesses[q].m != 0;
        levels_to(s, before);
        int top = g.owner ? s->level[g.owner] : 0, ok = 1;
        for (int t = g.start; t < g.start + g.len && ok; t++) {
            int c = s->args[t], n_seen = 0, pending = 0, v = lval(s, c);
            if (v > 0) {
                ok = 0;
            } else if (v < 0) {
                if (s->level[c] > 0) {
                    s->mark[c] = 1;
                    s->seen_list[n_seen++] = c;
                    pending++;
                }
                int d = newest_decision(s, n_seen, pending, -1);
                if (d > top) top = d;
            } else {
                new_level(s);
                if (assume(s, c)) {
                    ok = 0;
                } else {
                    mark_clause(s, s->conflict, 0, &n_seen, &pending);
                    int d = newest_decision(s, n_seen, pending, s->n_levels);
                    if (d > top) top = d;
                }
                undo_level(s);
            }
            if (s->oom) return -1;
        }
        if (ok) {
            s->n_proofs++;
            return top;
        }
        break;  /* one attempt: the earliest such choice */
    }
    levels_to(s, real_guesses(s));
    return -1;
}

/* The guesses up to level `top` cannot all hold: find the shortest prefix of the guesses
 * that cannot (its newest guess is where the search backtracks to). Completion of the
 * guesses before level `top` shows it is `top`; otherwise the SAT solver is asked about
 * those guesses. Returns 1 when the backjump is set, 0 when a question is pending. */
static int shorten(olm_searcher *s, int top) {
    s->result = UNSAT;
    if (top <= 0) {
        s->backjump = 0;
        return 1;
    }
    levels_to(s, top - 1);
    if (completes(s, PROOF_BUDGET)) {
        level_positions(s);
        s->backjump = s->lvl_pos[top] + 1;
        return 1;
    }
    s->ask_level = top - 1;
    s->awaiting = 1;
    s->n_solver_calls++;
    return 0;
}

int olm_searcher_run(olm_searcher *s) {
    if (s->root_unsat) return UNSAT;
    if (s->done || s->awaiting) return s->done;
    for (;;) {
        if (s->oom) return -2;
        if (s->shorten_from > 0) {
            int top = s->shorten_from;
            s->shorten_from = 0;
            if (!shorten(s, top)) return s->oom ? -2 : 0;
            continue;
        }
        if (s->q_len == 0 && s->result == UNKNOWN) {
            if (complete(s)) {
                s->result = SAT;
            } else {
                int top = s->proofs ? prove(s) : -1;
                if (s->oom) return -2;
                if (top >= 0) {
                    if (!shorten(s, top)) return s->oom ? -2 : 0;
                    continue;
                }
                s->ask_level = -1;
                s->awaiting = 1;
                s->n_solver_calls++;
                return 0;
            }
        }
        if (s->result == UNSAT) {
            if (s->n_guesses_stack == 0) {
                s->done = UNSAT;
                return UNSAT;
            }
            if (s->backjump >= 0 && s->n_guesses_stack > s->backjump) {
                if (!pop_guess(s, 1)) return -2;
                s->result = UNSAT;
                continue;
            }
            s->backjump = -1;
            if (!pop_guess(s, 0)) return -2;
            continue;
        }
        if (s->q_len == 0) {
            s->done = SAT;
            return SAT;
        }
        if (!push_guess(s)) return -2;
    }
}

int olm_searcher_assumptions(const olm_searcher *s, int *out) {
    int n = 0, limit = s->awaiting && s->ask_level >= 0 ? s->ask_level : -1;
    for (int i = 0; i < s->n_guesses_stack && (limit < 0 || n < limit); i++)
        if (s->guesses[i].m) {
            if (out) out[n] = s->guesses[i].m;
            n++;
        }
    return n;
}

int olm_searcher_resume(olm_searcher *s, int sat, const unsigned char *model, const int *core,
                        int n_core) {
    if (!s->awaiting) return -1;
    s->awaiting = 0;
    int asked = s->ask_level;  /* -1: all the guesses; else the first `asked` of them */
    s->ask_level = -1;
    if (sat && asked < 0) {
        memcpy(s->model, model, (size_t)s->n_vars);
        s->result = SAT;
        return 0;
    }
    s->result = UNSAT;
    if (sat) {
        /* the guesses before level asked + 1 can hold: that is the shortest prefix */
        level_positions(s);
        s->backjump = s->lvl_pos[asked + 1] + 1;
        return 0;
    }
    if (!core) {  /* no core: one guess shorter at a time */
        s->shorten_from = asked >= 0 ? asked : real_guesses(s);
        if (s->shorten_from == 0) s->backjump = 0;
        return 0;
    }
    /* the newest guess among the failed assumptions */
    for (int i = 0; i < n_core; i++)
        if (core[i] > 0 && core[i] <= s->n_total) s->mark[core[i]] = 1;
    int top = 0, level = 0;
    for (int p = 0; p < s->n_guesses_stack; p++) {
        int m = s->guesses[p].m;
        if (!m) continue;
        level++;
        if (s->mark[m] && (asked < 0 || level <= asked)) top = level;
    }
    for (int i = 0; i < n_core; i++)
        if (core[i] > 0 && core[i] <= s->n_total) s->mark[core[i]] = 0;
    if (top == 0) s->backjump = 0;
    else s->shorten_from = top;
    return 0;
}

void olm_searcher_model(const olm_searcher *s, unsigned char *out) {
    memcpy(out, s->model, (size_t)s->n_vars);
}

int olm_searcher_check(olm_searcher *s, const int *lits, int n, int complete) {
    if (s->units_unsat || s->empty_clause) return -1;
    s->n_levels = 0;
    for (int i = s->units_end; i < s->trail_len; i++) {
        int lit = s->trail[i];
        s->val[lit > 0 ? lit : -lit] = 0;
    }
    s->trail_len = s->units_end;
    s->qhead = 0;
    for (int i = 0; i < n; i++)
        if (!enqueue(s, lits[i])) return -1;
    if (!propagate(s)) return s->oom ? -2 : -1;
    if (!complete) return 0;
    for (int v = 1; v <= s->n_total; v++)
        if (!s->val[v] && !assume(s, -v)) return s->oom ? -2 : 0;
    return 1;
}

void olm_searcher_stats(const olm_searcher *s, long long *out) {
    out[0] = s->n_guesses;
    out[1] = s->n_backtracks;
    out[2] = s->n_propagations;
    out[3] = s->n_solver_calls;
    out[4] = s->n_proofs;
    out[5] = s->n_input;
}

/* ---------------------------------------------------------------- expansion */

/* Template expansion; see olmkit/_solver/_expand.py (layout) and _pure.expand (the twin). */

static const olm_block *block_for(const olm_block *blocks, const int *item_block, int item) {
    return &blocks[item_block[item]];
}

static inline int class_of(const olm_block *b, int item) { return b->item_class[item - b->item_off]; }

void olm_expansion_free(olm_expansion *e) {
    if (!e) return;
    free(e->var_item);
    free(e->group_keys);
    free(e->nodes);
    free(e->args);
    free(e->top);
    free(e->top_owner);
    free(e->top_index);
    free(e->vdep_start);
    free(e->vdep);
    memset(e, 0, sizeof *e);
}

typedef struct {
    ibuf nodes, args, top, top_owner, top_index, vdep;
    int x, owner, k;
} layout;

static void emit(layout *L, int kind, int param, int start, int len) {
    int n = (int)(L->nodes.len / 5);
    if (!ibuf_reserve(&L->nodes, 5)) return;
    int *d = L->nodes.data + L->nodes.len;
    d[0] = kind; d[1] = L->x; d[2] = param; d[3] = start; d[4] = len;
    L->nodes.len += 5;
    if (kind == DEPENDENCY && len > 0) ibuf_push(&L->vdep, n);
    ibuf_push(&L->top, n);
    ibuf_push(&L->top_owner, L->owner);
    ibuf_push(&L->top_index, L->k++);
}

int olm_expand(const olm_block *blocks, int n_blocks, int n_items, const int *slot,
               const int *ov_index, const int *ov_start, const int *ov_items, const int *ov_err,
               const int *seeds, int n_seeds, int n_front, const int *head_start, int n_heads,
               const int *head_cons, const int *head_items, const int *prefix, int n_prefix,
               int n_keys, olm_expansion *out) {
    int rc = -2, error = -1;
    memset(out, 0, sizeof *out);
    out->error = -1;
    int *item_block = malloc(((size_t)n_items + 1) * sizeof(int));
    int *owner = malloc(((size_t)n_items + 1) * sizeof(int));
    int *order = malloc(((size_t)n_items + 1) * sizeof(int));
    int *var_of = calloc((size_t)n_items + 1, sizeof(int));
    unsigned char **done = calloc((size_t)n_blocks + 1, sizeof(unsigned char *));
    int *key_count = calloc((size_t)n_keys + 1, sizeof(int));
    int *key_pos = malloc(((size_t)n_keys + 1) * sizeof(int));
    int *key_order = malloc(((size_t)n_keys + 1) * sizeof(int));
    int *members = NULL, *var_item = NULL, *pre_start = NULL, *pre_data = NULL;
    layout L;
    memset(&L, 0, sizeof L);
    ibuf anchors = {0};
    if (!item_block || !owner || !order || !var_of || !done || !key_count || !key_pos || !key_order)
        goto cleanup;
    for (int b = 0; b < n_blocks; b++) {
        const olm_block *B = &blocks[b];
        for (int i = 0; i < B->n_items; i++) item_block[B->item_off + i] = b;
        done[b] = calloc((size_t)B->n_classes + 1, 1);
        if (!done[b]) goto cleanup;
    }
    for (int i = 0; i < n_items; i++) owner[i] = -1;

    /* discovery, breadth first */
    int n_order = 0;
#define DISCOVER(it)                                   \
    do {                                               \
        int it_ = (it);                                \
        int s_ = slot ? slot[it_] : it_;               \
        if (owner[s_] < 0) {                           \
            owner[s_] = it_;                           \
            order[n_order++] = it_;                    \
        }                                              \
    } while (0)
    for (int i = 0; i < n_seeds; i++) DISCOVER(seeds[i]);
    for (int qi = 0; qi < n_order && error < 0; qi++) {
        int item = order[qi];
        int bi = item_block[item];
        const olm_block *B = &blocks[bi];
        int c = class_of(B, item);
        if (done[bi][c]) continue;
        done[bi][c] = 1;
        for (int t = B->class_start[c]; t < B->class_start[c + 1]; t++) {
            int code = B->class_codes[t];
            if (code < 0) {
                int x = -1 - code;
                if (x & 1) { error = B->err_off + (x >> 1); break; }
                continue;
            }
            int k = ov_index[B->pred_off + code];
            if (k >= 0) {
                if (ov_err[k] >= 0) { error = ov_err[k]; break; }
                for (int j = ov_start[k]; j < ov_start[k + 1]; j++) DISCOVER(ov_items[j]);
                continue;
            }
            if (B->pred_err && B->pred_err[code] >= 0) { error = B->err_off + B->pred_err[code]; break; }
            int off = B->item_off;
            for (int j = B->pred_start[code]; j < B->pred_start[code + 1]; j++)
                DISCOVER(off + B->pred_items[j]);
        }
    }
#undef DISCOVER
    if (error >= 0) { rc = 0; goto failed; }

    /* variable numbers: front items, heads, other items, groups */
    int n_item_vars = n_order;
    var_item = malloc(((size_t)n_item_vars + n_heads + n_keys + 1) * sizeof(int));
    if (!var_item) goto cleanup;
    int nv = 0;
    for (int p = 0; p < n_order; p++) {
        if (p == n_front)
            for (int h = 0; h < n_heads; h++) var_item[nv++] = -1 - h;
        var_item[nv++] = order[p];
    }
    if (n_order <= n_front)
        for (int h = 0; h < n_heads; h++) var_item[nv++] = -1 - h;
    for (int i = 0; i < nv; i++)
        if (var_item[i] >= 0) var_of[slot ? slot[var_item[i]] : var_item[i]] = i + 1;

    /* at-most-one groups: count members, in variable order, keys by first appearance */
    int n_key_order = 0;
    for (int i = 0; i < nv && error < 0; i++) {
        int item = var_item[i];
        if (item < 0) continue;
        const olm_block *B = block_for(blocks, item_block, item);
        int c = class_of(B, item);
        if (B->uerr && B->uerr[c] >= 0) { error = B->err_off + B->uerr[c]; break; }
        for (int t = B->ukey_start[c]; t < B->ukey_start[c + 1]; t++) {
            int key = B->key_map ? B->key_map[B->ukeys[t]] : B->ukeys[t];
            if (key_count[key]++ == 0) key_order[n_key_order++] = key;
        }
    }
    if (error >= 0) { rc = 0; goto failed; }
    size_t total = 0;
    for (int i = 0; i < n_key_order; i++) {
        int key = key_order[i];
        key_pos[key] = (int)total;
        total += (size_t)key_count[key];
    }
    members = malloc((total + 1) * sizeof(int));
    if (!members) goto cleanup;
    {
        int *fill = calloc((size_t)n_keys + 1, sizeof(int));
        if (!fill) goto cleanup;
        for (int i = 0; i < nv; i++) {
            int item = var_item[i];
            if (item < 0) continue;
            const olm_block *B = block_for(blocks, item_block, item);
            int c = class_of(B, item);
            for (int t = B->ukey_start[c]; t < B->ukey_start[c + 1]; t++) {
                int key = B->key_map ? B->key_map[B->ukeys[t]] : B->ukeys[t];
                members[key_pos[key] + fill[key]++] = i + 1;
            }
        }
        free(fill);
    }
    int n_groups = 0;
    out->group_keys = malloc(((size_t)n_key_order + 1) * sizeof(int));
    if (!out->group_keys) goto cleanup;
    for (int i = 0; i < n_key_order; i++)
        if (key_count[key_order[i]] >= 2) {
            out->group_keys[n_groups++] = key_order[i];
            var_item[nv++] = -1 - n_heads - (n_groups - 1);
        }
    out->n_groups = n_groups;

    /* prefixes by slot, in order */
    pre_start = calloc((size_t)n_items + 2, sizeof(int));
    pre_data = malloc(((size_t)n_prefix + 1) * 2 * sizeof(int));
    if (!pre_start || !pre_data) goto cleanup;
    for (int t = 0; t < n_prefix; t++) {
        int it = prefix[3 * t];
        pre_start[(slot ? slot[it] : it) + 1]++;
    }
    for (int i = 0; i < n_items; i++) pre_start[i + 1] += pre_start[i];
    {
        int *fill = calloc((size_t)n_items + 1, sizeof(int));
        if (!fill) goto cleanup;
        for (int t = 0; t < n_prefix; t++) {
            int it = prefix[3 * t], s = slot ? slot[it] : it;
            int at = pre_start[s] + fill[s]++;
            pre_data[2 * at] = prefix[3 * t + 1];
            pre_data[2 * at + 1] = prefix[3 * t + 2];
        }
        free(fill);
    }

    /* layout, one variable at a time, as flatten() lays out Variable lists */
    out->vdep_start = malloc(((size_t)nv + 1) * sizeof(int));
    if (!out->vdep_start) goto cleanup;
    out->vdep_start[0] = 0;
    for (int i = 0; i < nv; i++) {
        int item = var_item[i], anchor = 0;
        L.x = i + 1;
        L.owner = i;
        L.k = 0;
        if (item >= 0) {
            int s = slot ? slot[item] : item;
            for (int t = pre_start[s]; t < pre_start[s + 1]; t++) {
                if (pre_data[2 * t] == MANDATORY) {
                    emit(&L, MANDATORY, 0, 0, 0);
                    anchor = 1;
                } else {
                    int other = pre_data[2 * t + 1];
                    emit(&L, CONFLICT, 0, (int)L.args.len, 1);
                    ibuf_push(&L.args, var_of[slot ? slot[other] : other]);
                }
            }
            const olm_block *B = block_for(blocks, item_block, item);
            int c = class_of(B, item);
            for (int t = B->class_start[c]; t < B->class_start[c + 1]; t++) {
                int code = B->class_codes[t];
                if (code < 0) {
                    emit(&L, PROHIBITED, 0, 0, 0);
                    continue;
                }
                int k = ov_index[B->pred_off + code];
                int start = (int)L.args.len;
                if (k >= 0) {
                    int n = ov_start[k + 1] - ov_start[k];
                    emit(&L, DEPENDENCY, 0, start, n);
                    if (!ibuf_reserve(&L.args, (size_t)n)) goto cleanup;
                    for (int j = ov_start[k]; j < ov_start[k + 1]; j++) {
                        int o = ov_items[j];
                        L.args.data[L.args.len++] = var_of[slot ? slot[o] : o];
                    }
                } else {
                    int n = B->pred_start[code + 1] - B->pred_start[code], off = B->item_off;
                    emit(&L, DEPENDENCY, 0, start, n);
                    if (!ibuf_reserve(&L.args, (size_t)n)) goto cleanup;
                    for (int j = B->pred_start[code]; j < B->pred_start[code + 1]; j++) {
                        int o = off + B->pred_items[j];
                        L.args.data[L.args.len++] = var_of[slot ? slot[o] : o];
                    }
                }
            }
        } else if (-item <= n_heads) {
            int h = -1 - item;
            for (int t = head_start[h]; t < head_start[h + 1]; t++) {
                int kind = head_cons[3 * t], start = head_cons[3 * t + 1], len = head_cons[3 * t + 2];
                if (kind == MANDATORY) {
                    emit(&L, MANDATORY, 0, 0, 0);
                    anchor = 1;
                } else if (kind == PROHIBITED) {
                    emit(&L, PROHIBITED, 0, 0, 0);
                } else {
                    emit(&L, DEPENDENCY, 0, (int)L.args.len, len);
                    if (!ibuf_reserve(&L.args, (size_t)len)) goto cleanup;
                    for (int j = start; j < start + len; j++) {
                        int o = head_items[j];
                        L.args.data[L.args.len++] = var_of[slot ? slot[o] : o];
                    }
                }
            }
        } else {
            int g = -1 - item - n_heads, key = out->group_keys[g];
            emit(&L, MANDATORY, 0, 0, 0);
            anchor = 1;
            emit(&L, ATMOST, 1, (int)L.args.len, key_count[key]);
            if (!ibuf_reserve(&L.args, (size_t)key_count[key])) goto cleanup;
            memcpy(L.args.data + L.args.len, members + key_pos[key], (size_t)key_count[key] * sizeof(int));
            L.args.len += (size_t)key_count[key];
        }
        if (anchor) ibuf_push(&anchors, L.x);
        out->vdep_start[i + 1] = (int)L.vdep.len;
        if (L.nodes.oom || L.args.oom || L.top.oom || L.top_owner.oom || L.top_index.oom || L.vdep.oom ||
            anchors.oom)
            goto cleanup;
    }
    out->anchor_start = (int)L.args.len;
    out->n_anchors = (int)anchors.len;
    if (!ibuf_reserve(&L.args, anchors.len + 1)) goto cleanup;
    if (anchors.len) memcpy(L.args.data + L.args.len, anchors.data, anchors.len * sizeof(int));
    L.args.len += anchors.len;

    out->n_vars = nv;
    out->var_item = var_item;
    var_item = NULL;
    out->nodes = L.nodes.data; out->n_nodes = L.nodes.len;
    out->args = L.args.data; out->n_args = L.args.len;
    out->top = L.top.data; out->top_owner = L.top_owner.data; out->top_index = L.top_index.data;
    out->n_top = (int)L.top.len;
    out->vdep = L.vdep.data; out->n_vdep = (int)L.vdep.len;
    memset(&L, 0, sizeof L);
    rc = 0;
    goto cleanup;

failed:
    out->error = error;
cleanup:
    if (rc) olm_expansion_free(out);
    free(L.nodes.data); free(L.args.data); free(L.top.data); free(L.top_owner.data);
    free(L.top_index.data); free(L.vdep.data); free(anchors.data);
    free(item_block); free(owner); free(order); free(var_of);
    if (done)
        for (int b = 0; b < n_blocks; b++) free(done[b]);
    free(done); free(key_count); free(key_pos); free(key_order);
    free(members); free(var_item); free(pre_start); free(pre_data);
    return rc;
}
