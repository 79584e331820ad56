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
