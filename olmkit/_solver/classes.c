/* Laying out expansion classes from rows of shared atoms: see _classes.py (the contract)
 * and _pure_classes.py (the pure-Python twin, which gives the same arrays). */
#include <stdlib.h>
#include <string.h>

#include "classes.h"

static int *alloc_ints(size_t n, int fill) {
    int *p = malloc((n ? n : 1) * sizeof(int));
    if (p) {
        for (size_t i = 0; i < n; i++) p[i] = fill;
    }
    return p;
}

void olm_layout_free(olm_layout *out) {
    free(out->codes);
    free(out->code_start);
    free(out->keys);
    free(out->key_start);
    free(out->template_order);
    free(out->list_order);
    free(out->list_row);
    free(out->list_atom);
    free(out->atom_order);
    free(out->key_order);
    memset(out, 0, sizeof(*out));
}

int olm_lay_out(int n_rows, const int *row_start, const int *row_atoms, int n_atoms,
                const int *atom_template, const int *atom_list, const int *atom_key,
                const int *atom_group, int n_templates, int n_lists, int n_keys, olm_layout *out) {
    size_t n_occ = (size_t)row_start[n_rows];
    int rc = 1;
    int *template_number = alloc_ints((size_t)n_templates, -1);
    int *list_number = alloc_ints((size_t)n_lists, -1);
    int *key_number = alloc_ints((size_t)n_keys, -1);
    unsigned char *atom_seen = calloc((size_t)n_atoms + 1, 1);
    /* per row scratch: the keyed atoms (group, key) and the groups in order */
    int *kg = malloc((n_occ + 1) * sizeof(int));
    int *kk = malloc((n_occ + 1) * sizeof(int));
    int *order = malloc((n_occ + 1) * sizeof(int));
    /* the key numbers a row listed: stamped with the row */
    int *listed = alloc_ints((size_t)n_keys, -1);
    memset(out, 0, sizeof(*out));
    /* a row contributes at most two codes and one key per atom */
    out->codes = malloc((2 * n_occ + 1) * sizeof(int));
    out->code_start = malloc(((size_t)n_rows + 1) * sizeof(int));
    out->keys = malloc((n_occ + 1) * sizeof(int));
    out->key_start = malloc(((size_t)n_rows + 1) * sizeof(int));
    out->template_order = malloc(((size_t)n_templates + 1) * sizeof(int));
    out->list_order = malloc(((size_t)n_lists + 1) * sizeof(int));
    out->list_row = malloc(((size_t)n_lists + 1) * sizeof(int));
    out->list_atom = malloc(((size_t)n_lists + 1) * sizeof(int));
    out->atom_order = malloc(((size_t)n_atoms + 1) * sizeof(int));
    out->key_order = malloc(((size_t)n_keys + 1) * sizeof(int));
    if (!template_number || !list_number || !key_number || !atom_seen || !kg || !kk || !order ||
        !listed || !out->codes || !out->code_start || !out->keys || !out->key_start ||
        !out->template_order || !out->list_order || !out->list_row || !out->list_atom ||
        !out->atom_order || !out->key_order) {
        olm_layout_free(out);
        goto done;
    }
    out->code_start[0] = 0;
    out->key_start[0] = 0;
    for (int r = 0; r < n_rows; r++) {
        int n_keyed = 0;
        for (int i = row_start[r]; i < row_start[r + 1]; i++) {
            int a = row_atoms[i];
            int t = atom_template[a];
            if (t >= 0) {
                int n = template_number[t];
                if (n < 0) {
                    n = template_number[t] = out->n_templates;
                    out->template_order[out->n_templates++] = t;
                }
                out->codes[out->n_codes++] = -1 - 2 * n;
            }
            int l = atom_list[a];
            if (l >= 0) {
                int n = list_number[l];
                if (n < 0) {
                    n = list_number[l] = out->n_lists;
                    out->list_order[out->n_lists] = l;
                    out->list_row[out->n_lists] = r;
                    out->list_atom[out->n_lists] = a;
                    out->n_lists++;
                }
                if (!atom_seen[a]) {
                    atom_seen[a] = 1;
                    out->atom_order[out->n_atom_order++] = a;
                }
                out->codes[out->n_codes++] = n;
            }
            if (atom_key[a] >= -1) {
                kg[n_keyed] = atom_group[a];
                kk[n_keyed] = atom_key[a];
                n_keyed++;
            }
        }
        out->code_start[r + 1] = out->n_codes;
        /* the groups in order of first appearance */
        int n_groups = 0;
        for (int i = 0; i < n_keyed; i++) {
            int seen = 0;
            for (int j = 0; j < n_groups; j++) {
                if (order[j] == kg[i]) {
                    seen = 1;
                    break;
                }
            }
            if (!seen) order[n_groups++] = kg[i];
        }
        for (int j = 0; j < n_groups; j++) {
            for (int i = 0; i < n_keyed; i++) {
                int k = kk[i];
                if (kg[i] != order[j] || k < 0) continue;
                int n = key_number[k];
                if (n < 0) {
                    n = key_number[k] = out->n_key_order;
                    out->key_order[out->n_key_order++] = k;
                }
                if (listed[n] != r) {
                    listed[n] = r;
                    out->keys[out->n_keys++] = n;
                }
            }
        }
        out->key_start[r + 1] = out->n_keys;
    }
    rc = 0;
done:
    free(template_number);
    free(list_number);
    free(key_number);
    free(atom_seen);
    free(kg);
    free(kk);
    free(order);
    free(listed);
    return rc;
}

/* -- selecting rows by programs (see _select.py; twin in _pure_select.py) ------------ */

enum { SEL_MEMBER, SEL_RANKED, SEL_HAS, SEL_ALL, SEL_ANY, SEL_NONE };
enum { CMP_EQ, CMP_GE, CMP_LT, CMP_GT, CMP_LE, CMP_NE };

typedef struct {
    const int *prog;
    int end;
    int row;
    const int *atoms;
    int n_atoms_row;
    const int *atom_type, *atom_owner, *atom_rank, *set_start, *set_rows;
    int n_sets;
} sel_ctx;

static int compare_rank(int op, int rank, int lo, int hi) {
    switch (op) {
    case CMP_EQ: return lo <= rank && rank < hi;
    case CMP_GE: return rank >= lo;
    case CMP_LT: return rank < lo;
    case CMP_GT: return rank >= hi;
    case CMP_LE: return rank < hi;
    default: return !(lo <= rank && rank < hi);
    }
}

/* Evaluates the node at *pc, advancing it past the node: 1 or 0, -1 for a malformed program. */
static int sel_run(const sel_ctx *c, int *pc, int depth) {
    const int *prog = c->prog;
    int at = *pc;
    if (depth > 10000 || at >= c->end) return -1;
    int code = prog[at];
    if (code == SEL_MEMBER) {
        if (at + 2 > c->end) return -1;
        int s = prog[at + 1];
        if (s < 0 || s >= c->n_sets) return -1;
        *pc = at + 2;
        int lo = c->set_start[s], hi = c->set_start[s + 1];
        while (lo < hi) {
            int mid = lo + (hi - lo) / 2;
            if (c->set_rows[mid] < c->row) lo = mid + 1;
            else hi = mid;
        }
        return lo < c->set_start[s + 1] && c->set_rows[lo] == c->row;
    }
    if (code == SEL_RANKED) {
        if (at + 4 > c->end) return -1;
        int t = prog[at + 1], owner = prog[at + 2], n_alt = prog[at + 3];
        int start = at + 4, p = start;
        if (n_alt < 0) return -1;
        for (int k = 0; k < n_alt; k++) {
            if (p >= c->end) return -1;
            int n_cmp = prog[p];
            if (n_cmp < 0 || p + 1 + 3 * (long long)n_cmp > c->end) return -1;
            p += 1 + 3 * n_cmp;
        }
        *pc = p;
        if (owner < 0) return 0;
        for (int i = 0; i < c->n_atoms_row; i++) {
            int a = c->atoms[i];
            if (c->atom_type[a] != t || c->atom_owner[a] != owner) continue;
            int rank = c->atom_rank[a];
            if (rank < 0) continue;
            int q = start;
            for (int k = 0; k < n_alt; k++) {
                int n_cmp = prog[q++];
                int ok = 1;
                for (int j = 0; j < n_cmp && ok; j++) ok = compare_rank(prog[q + 3 * j], rank, prog[q + 3 * j + 1], prog[q + 3 * j + 2]);
                q += 3 * n_cmp;
                if (ok) return 1;
            }
        }
        return 0;
    }
    if (code == SEL_HAS) {
        if (at + 2 > c->end) return -1;
        int t = prog[at + 1];
        *pc = at + 2;
        if (t < 0) return 0;
        for (int i = 0; i < c->n_atoms_row; i++)
            if (c->atom_type[c->atoms[i]] == t) return 1;
        return 0;
    }
    if (code != SEL_ALL && code != SEL_ANY && code != SEL_NONE) return -1;
    if (at + 2 > c->end) return -1;
    int n = prog[at + 1];
    if (n < 0) return -1;
    *pc = at + 2;
    int any = 0, all = 1;
    for (int k = 0; k < n; k++) {
        int v = sel_run(c, pc, depth + 1);
        if (v < 0) return -1;
        any |= v;
        all &= v;
    }
    if (code == SEL_ALL) return all;
    if (code == SEL_ANY) return any;
    return !any;
}

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Sorts v[0..n) ascending: most lists are ascending or descending runs already (a channel's
   entries, newest first, of rows in ascending order), or short; qsort for the others. */
static void sort_ints(int *v, size_t n) {
    if (n < 2) return;
    size_t up = 1, down = 1;
    for (size_t i = 1; i < n; i++) {
        up += v[i - 1] <= v[i];
        down += v[i - 1] >= v[i];
    }
    if (up == n) return;
    if (down == n) {
        for (size_t i = 0, j = n - 1; i < j; i++, j--) {
            int t = v[i];
            v[i] = v[j];
            v[j] = t;
        }
        return;
    }
    if (n <= 32) {
        for (size_t i = 1; i < n; i++) {
            int x = v[i];
            size_t j = i;
            for (; j > 0 && v[j - 1] > x; j--) v[j] = v[j - 1];
            v[j] = x;
        }
        return;
    }
    qsort(v, n, sizeof(int), cmp_int);
}

int olm_select(int n_progs, const int *prog_start, const int *prog, const int *cand_start,
               const int *cand_sets, int n_rows, const int *row_start, const int *row_atoms,
               const int *atom_type, const int *atom_owner, const int *atom_rank, int n_sets,
               const int *set_start, const int *set_rows, int n_item_rows, const int *item_start,
               const int *items, int **out, size_t *out_len, int *out_start) {
    size_t cap = 1024, len = 0;
    int *buf = malloc(cap * sizeof(int));
    int *stamp = malloc(((size_t)n_item_rows + 1) * sizeof(int));
    int *rows = malloc(((size_t)n_item_rows + 1) * sizeof(int));
    int rc = 1;
    if (!buf || !stamp || !rows) goto fail;
    for (int r = 0; r < n_item_rows; r++) stamp[r] = -1;
    out_start[0] = 0;
    for (int p = 0; p < n_progs; p++) {
        int n = 0;
        int c0 = cand_start[p], c1 = cand_start[p + 1];
        if (c1 - c0 == 1 && cand_sets[c0] < 0) {
            for (int r = 0; r < n_rows; r++) rows[n++] = r;
        } else {
            for (int i = c0; i < c1; i++) {
                int s = cand_sets[i];
                if (s < 0 || s >= n_sets) { rc = 2; goto fail; }
                for (int j = set_start[s]; j < set_start[s + 1]; j++) {
                    int r = set_rows[j];
                    if (stamp[r] != p) {
                        stamp[r] = p;
                        rows[n++] = r;
                    }
                }
            }
            if (c1 - c0 > 1) sort_ints(rows, (size_t)n);
        }
        size_t first = len;
        for (int i = 0; i < n; i++) {
            int r = rows[i];
            sel_ctx c = {prog, prog_start[p + 1], r, row_atoms + row_start[r], row_start[r + 1] - row_start[r],
                         atom_type, atom_owner, atom_rank, set_start, set_rows, n_sets};
            int pc = prog_start[p];
            int v = sel_run(&c, &pc, 0);
            if (v < 0 || pc != prog_start[p + 1]) { rc = 2; goto fail; }
            if (!v) continue;
            int k0 = item_start[r], k1 = item_start[r + 1];
            if (len + (size_t)(k1 - k0) > cap) {
                while (len + (size_t)(k1 - k0) > cap) cap *= 2;
                int *grown = realloc(buf, cap * sizeof(int));
                if (!grown) goto fail;
                buf = grown;
            }
            for (int k = k0; k < k1; k++) buf[len++] = items[k];
        }
        if (len - first > 1) sort_ints(buf + first, len - first);
        out_start[p + 1] = (int)len;
    }
    free(stamp);
    free(rows);
    *out = buf;
    *out_len = len;
    return 0;
fail:
    free(buf);
    free(stamp);
    free(rows);
    return rc;
}
