/* Grouping indices by key, and the checks of int tables: see _group.py (the contract) and
 * _pure_group.py (the pure-Python twin, which gives the same arrays and answers). */
#include "group.h"

int olm_group(int n, const int *keys, int n_keys, int *items, int *start) {
    /* a counting sort: start[k] .. start[k + 1] are key k's indices, ascending */
    for (int k = 0; k <= n_keys; k++) start[k] = 0;
    for (int i = 0; i < n; i++) {
        int k = keys[i];
        if (k < 0 || k >= n_keys) return 2;
        start[k + 1]++;
    }
    for (int k = 0; k < n_keys; k++) start[k + 1] += start[k];
    /* fill each group from its start; start[k] then holds the group's end, shifted back below */
    for (int i = 0; i < n; i++) items[start[keys[i]]++] = i;
    for (int k = n_keys; k > 0; k--) start[k] = start[k - 1];
    start[0] = 0;
    return 0;
}

int olm_ascending(int n, const int *a) {
    for (int i = 1; i < n; i++) {
        if (a[i] < a[i - 1]) return 0;
    }
    return 1;
}

int olm_within(int n, const int *a, int lo, int hi) {
    for (int i = 0; i < n; i++) {
        if (a[i] < lo || a[i] >= hi) return 0;
    }
    return 1;
}

int olm_scatter(int n, const int *at, const int *values, int n_dest, int *dest) {
    if (!olm_within(n, at, 0, n_dest)) return 2;
    for (int i = 0; i < n; i++) dest[at[i]] = values[i];
    return 0;
}

int olm_take(int n, const int *at, const int *table, int n_table, int *out) {
    for (int i = 0; i < n; i++) {
        if (at[i] < 0 || at[i] >= n_table) return 2;
        out[i] = table[at[i]];
    }
    return 0;
}
