/* The hash the C readers' tables probe with (scan.c, channels.c), and the open-addressing
 * tables of numbers they share. The hash: eight bytes at a time (a
 * byte-wise FNV-1a was most of either reader's time), each word mixed in by a multiply whose
 * high half is folded back into the low bits (the tables probe from the low bits), the length
 * closing it, finished by MurmurHash3's fmix64. Only ever compared with hashes made in the same
 * process: it decides where a table looks, never an output, so any change of it changes none. */
#ifndef OLMKIT_HASH_H
#define OLMKIT_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define OLM_HASH_SEED 1469598103934665603ULL
#define OLM_HASH_K 0x9E3779B97F4A7C15ULL

static inline uint64_t olm_hash_word(uint64_t h, uint64_t w) {
    h = (h ^ w) * OLM_HASH_K;
    return h ^ (h >> 32);
}

/* the final mix of MurmurHash3's fmix64 */
static inline uint64_t olm_hash_fmix(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    return h ^ (h >> 33);
}

/* the bytes mixed into h, not yet finished by olm_hash_fmix */
static inline uint64_t olm_hash_raw(uint64_t h, const char *p, size_t n) {
    size_t len = n;
    if (n >= 16) { /* two lanes, sixteen bytes at a time: half the multiplies' latency */
        uint64_t h2 = h ^ OLM_HASH_K;
        while (n >= 16) {
            uint64_t w, w2;
            memcpy(&w, p, 8);
            memcpy(&w2, p + 8, 8);
            h = olm_hash_word(h, w);
            h2 = olm_hash_word(h2, w2);
            p += 16;
            n -= 16;
        }
        h = olm_hash_word(h, h2);
    }
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = olm_hash_word(h, w);
        p += 8;
        n -= 8;
    }
    if (n) {
        uint64_t w = 0;
        memcpy(&w, p, n);
        h = olm_hash_word(h, w);
    }
    return olm_hash_word(h, (uint64_t)len);
}

/* n bytes after h, finished */
static inline uint64_t olm_hash_bytes(uint64_t h, const char *p, size_t n) { return olm_hash_fmix(olm_hash_raw(h, p, n)); }

/* an open-addressing table (cap a power of two) of the numbers 0 .. n - 1 by their hashes:
 * a slot holds a number + 1, 0 when empty; NULL out of memory */
static inline int *olm_table_of(const uint64_t *hash, size_t n, size_t cap) {
    int *table = calloc(cap, sizeof(int));
    if (!table) return NULL;
    for (size_t k = 0; k < n; k++) {
        size_t i = (size_t)hash[k] & (cap - 1);
        while (table[i]) i = (i + 1) & (cap - 1);
        table[i] = (int)k + 1;
    }
    return table;
}

/* room in an olm_table_of table for one more of n numbers (at most half full), grown if
 * need be: 0, 1 out of memory */
static inline int olm_table_room(int **table, size_t *cap, const uint64_t *hash, size_t n) {
    if ((n + 1) * 2 <= *cap) return 0;
    size_t cap2 = *cap ? *cap * 2 : 1024;
    int *grown = olm_table_of(hash, n, cap2);
    if (!grown) return 1;
    free(*table);
    *table = grown;
    *cap = cap2;
    return 0;
}

#endif
