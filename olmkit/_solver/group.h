/* Declarations of group.c; _speedups_build.py hands them to cffi (preprocessor lines removed). */
#ifndef OLMKIT_GROUP_H
#define OLMKIT_GROUP_H

/* indices grouped by key (see _group.py): 0, or 2 when a key is out of range */
int olm_group(int n, const int *keys, int n_keys, int *items, int *start);
/* 1 when a[0..n) never decreases */
int olm_ascending(int n, const int *a);
/* 1 when lo <= a[i] < hi for every i < n */
int olm_within(int n, const int *a, int lo, int hi);
/* dest[at[i]] = values[i] for every i < n: 0, or 2 when an index is not in 0 .. n_dest-1 (dest untouched) */
int olm_scatter(int n, const int *at, const int *values, int n_dest, int *dest);
/* out[i] = table[at[i]] for every i < n: 0, or 2 when an index is not in 0 .. n_table-1 */
int olm_take(int n, const int *at, const int *table, int n_table, int *out);

#endif
