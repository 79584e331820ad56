/* Declarations of encode.c; _speedups_build.py hands them to cffi (preprocessor lines removed). */
#ifndef OLMKIT_ENCODE_H
#define OLMKIT_ENCODE_H
#include <stddef.h>

typedef struct olm_searcher olm_searcher;

int olm_encode(int n_vars, const int *nodes, const int *args, const int *top, int n_act,
               int **out, size_t *out_len, int *top_var);
int olm_encode_counter(int first_var, const int *lits, int k, int **out, size_t *out_len,
                       int *outs, int *top_var);
void olm_free(void *p);

olm_searcher *olm_searcher_new(int n_vars, int n_total, int *clauses, size_t n_clause_ints,
                               int n_act, const int *nodes, const int *args, int anchor_start,
                               int n_anchors, const int *vdep_start, const int *vdep, int proofs,
                               int consume);
void olm_searcher_free(olm_searcher *s);
int olm_searcher_run(olm_searcher *s);
int olm_searcher_assumptions(const olm_searcher *s, int *out);
int olm_searcher_resume(olm_searcher *s, int sat, const unsigned char *model, const int *core,
                        int n_core);
void olm_searcher_model(const olm_searcher *s, unsigned char *out);
int olm_searcher_check(olm_searcher *s, const int *lits, int n, int complete);
void olm_searcher_stats(const olm_searcher *s, long long *out);

/* template expansion (see _expand.py) */
typedef struct {
    int item_off, n_items, pred_off, err_off, n_classes;
    const int *item_class, *class_start, *class_codes, *ukey_start, *ukeys, *uerr;
    const int *pred_start, *pred_items, *pred_err, *key_map;
} olm_block;

typedef struct {
    int error, n_vars, anchor_start, n_anchors, n_groups, n_top, n_vdep;
    size_t n_nodes, n_args;
    int *var_item, *group_keys, *nodes, *args, *top, *top_owner, *top_index, *vdep_start, *vdep;
} olm_expansion;

int olm_expand(const olm_block *blocks, int n_blocks, int n_items, const int *slot,
               const int *ov_index, const int *ov_start, const int *ov_items, const int *ov_err,
               const int *seeds, int n_seeds, int n_front, const int *head_start, int n_heads,
               const int *head_cons, const int *head_items, const int *prefix, int n_prefix,
               int n_keys, olm_expansion *out);
void olm_expansion_free(olm_expansion *e);

#endif
