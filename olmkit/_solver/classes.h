/* Declarations of classes.c; _speedups_build.py hands them to cffi (preprocessor lines removed). */
#ifndef OLMKIT_CLASSES_H
#define OLMKIT_CLASSES_H
#include <stddef.h>

/* class layout from rows of shared atoms (see _classes.py) */
typedef struct {
    int n_codes, n_keys, n_templates, n_lists, n_atom_order, n_key_order;
    int *codes, *code_start, *keys, *key_start, *template_order, *list_order, *list_row,
        *list_atom, *atom_order, *key_order;
} olm_layout;

int olm_lay_out(int n_rows, const int *row_start, const int *row_atoms, int n_atoms,
                const int *atom_template, const int *atom_list, const int *atom_key,
                const int *atom_group, int n_templates, int n_lists, int n_keys, olm_layout *out);
void olm_layout_free(olm_layout *out);

/* rows selected by programs (see _select.py): 0, 1 out of memory, 2 malformed */
int olm_select(int n_progs, const int *prog_start, const int *prog, const int *cand_start,
               const int *cand_sets, int n_rows, const int *row_start, const int *row_atoms,
               const int *atom_type, const int *atom_owner, const int *atom_rank, int n_sets,
               const int *set_start, const int *set_rows, int n_item_rows, const int *item_start,
               const int *items, int **out, size_t *out_len, int *out_start);

#endif
