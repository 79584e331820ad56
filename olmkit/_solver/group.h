/* Declarations of group.c; _speedups_build.py hands them to cffi (preprocessor lines removed). */
#ifndef OLMKIT_GROUP_H
#define OLMKIT_GROUP_H

/* indices grouped by key (see _group.py): 0, or 2 when a key is out of range */
int olm_group(int n, const int *keys, int n_keys, int *items, int *start);
/* 1 when a[0..n) never decreases */
int olm_ascending(int n, const int *a);
/* 1 when lo <= a[i] < hi for every i < n */
int olm_within(int n, const int *a, int lo, int hi);

#endif
