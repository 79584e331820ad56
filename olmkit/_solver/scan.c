/* Scanning catalog files of one JSON blob per line into bundle rows: see _scan.py (the contract).
 *
 * Every line is checked to be exactly one JSON value (RFC 8259: strings of valid UTF-8 without
 * control characters, numbers, literals, objects and arrays nested at most MAX_DEPTH deep); a
 * file with any other line is not taken (status 2) and the caller reads it its usual way. A
 * line that is a plain bundle blob (an object with "schema": "olm.bundle", "name", "package",
 * optionally "image" and "properties", an array of objects with exactly "type" and "value", no
 * other or repeated key, no escape in those strings) is taken: its name, package and image, and
 * each property as a distinct property, interned by (key order, type, value's text without the
 * whitespace outside strings). Every other line is left to the caller (line_kind -1).
 *
 * A value's text without whitespace is what orjson writes for the value it reads, except where
 * flagged (flag 2) for the caller to canonicalise: an escape orjson does not write (\/, \u), a number other than
 * an integer of at most 18 digits (fractions, exponents, -0, large), a repeated key in an object
 * (or an object too large to check for one).
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "scan.h"

#define MAX_DEPTH 64
#define MAX_KEYS 32
#define F_VALUE_FIRST 1
#define F_CANON 2
#define F_ODD 8 /* for the caller to read itself (a text to canonicalise, a type read that way, a value not plain) */
#define MAX_FIELDS 8
#define K_IDENTITY 1
#define K_FIELDS 2
#define K_ODD 4

typedef struct {
    char *v;
    size_t n, cap;
} bytes_t;

typedef struct {
    int *v;
    size_t n, cap;
} ints_t;

typedef struct {
    const char *type;
    int type_len;
    size_t value_off;
    int value_len;
    int flags;
    uint64_t hash; /* hash_of its flags, type and value (see intern) */
} prop_t;

/* a type registered with olm_scan_type */
typedef struct {
    char *name;
    int len, kind, n_fields, key_fields;
    unsigned empty_mask;
    char *field[MAX_FIELDS];
    int field_len[MAX_FIELDS];
} kind_t;

/* an interning table of texts: text i at off[i] in text (each followed by a newline) */
typedef struct {
    bytes_t text;
    size_t *off;
    uint64_t *hash;
    size_t n, cap;
    int *table; /* number + 1, 0 for an empty slot */
    size_t table_cap;
} strings_t;

typedef struct {
    bytes_t names, images, arena, scratch, new_texts;
    strings_t packages; /* the bundles' packages, numbered in the order met */
    /* every bundle taken or registered: the hash of its package and name, and a table of them */
    uint64_t *bh;
    size_t n_bh, bh_cap, bh_table_cap;
    int *bh_table;
    kind_t *kinds;
    size_t n_kinds, kinds_cap;
    strings_t types, strings;
    int *type_kind; /* per type met: its registered kind, -1 none */
    int type_seen[8]; /* by a type name's length % 8: a type met (its number + 1, 0 none), to try first */
    int last_package; /* the package of the last bundle taken (its number + 1, 0 none), to try first */
    size_t type_kind_cap;
    ints_t key_type, key_start, key_strs;
    uint64_t *key_hash;
    size_t key_hash_cap;
    int *key_table;
    size_t key_table_cap;
    ints_t line_kind, line_start, line_end, b_line, b_prop_start, b_ndist, occ, odd, b_pkg;
    size_t d_cap;
    uint64_t *d_hash;
    uint64_t *table; /* SLOT(hash, distinct), 0 for an empty slot */
    size_t table_cap;
    prop_t *props;
    size_t n_props, props_cap;
} priv_t;

static int grow(void **v, size_t *cap, size_t need, size_t size) {
    if (need <= *cap) return 0;
    size_t cap2 = *cap ? *cap : 1024;
    while (cap2 < need) cap2 *= 2;
    void *p = realloc(*v, cap2 * size);
    if (!p) return 1;
    *v = p;
    *cap = cap2;
    return 0;
}

static inline int put_bytes(bytes_t *b, const char *p, size_t n) {
    if (b->n + n + 1 > b->cap && grow((void **)&b->v, &b->cap, b->n + n + 1, 1)) return 1;
    memcpy(b->v + b->n, p, n);
    b->n += n;
    return 0;
}

static inline int put_int(ints_t *a, int x) {
    if (a->n + 1 > a->cap && grow((void **)&a->v, &a->cap, a->n + 1, sizeof(int))) return 1;
    a->v[a->n++] = x;
    return 0;
}

/* ------------------------------------------------------------------ the JSON checker */

typedef struct {
    const char *p, *end;
    bytes_t *out; /* where a value's text without whitespace goes, or NULL */
    int flags;    /* F_CANON once something needs canonicalising */
    int oom;
} parser_t;

#define BAD (-1)
#define ONES 0x0101010101010101ULL
#if defined(_MSC_VER)
#include <intrin.h>
#pragma intrinsic(_BitScanForward64)
static inline unsigned first_byte(uint64_t m) {
    unsigned long i;
    _BitScanForward64(&i, m);
    return (unsigned)i >> 3;
}
#define PREFETCH(p) ((void)(p))
#elif defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define first_byte(m) ((unsigned)__builtin_clzll(m) >> 3)
#define PREFETCH(p) __builtin_prefetch(p)
#else
#define first_byte(m) ((unsigned)__builtin_ctzll(m) >> 3)
#define PREFETCH(p) __builtin_prefetch(p)
#endif
#define LOW7 (ONES * 0x7F)
#define HIGH (ONES * 0x80)

/* per byte of w, its high bit set when it is a quote, a backslash, a control
 * character or not ASCII, and only then (exact: no carry crosses bytes) */
static inline uint64_t special(uint64_t w) {
    uint64_t q = w ^ (ONES * '"'), b = w ^ (ONES * '\\');
    uint64_t zq = ~(((q & LOW7) + LOW7) | q), zb = ~(((b & LOW7) + LOW7) | b);
    uint64_t lt = ~(((w & LOW7) + ONES * (0x80 - 0x20)) | w);
    return (zq | zb | lt | w) & HIGH;
}

static inline void skip_ws(parser_t *s) {
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\r')) s->p++;
}

static inline int emit(parser_t *s, const char *p, size_t n) {
    bytes_t *b = s->out;
    if (!b) return 0;
    if (n == 1 && b->n + 2 <= b->cap) { /* a bracket, a comma or a colon: no call */
        b->v[b->n++] = *p;
        return 0;
    }
    if (put_bytes(b, p, n)) {
        s->oom = 1;
        return BAD;
    }
    return 0;
}

static inline int is_hex(unsigned char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* a string at s->p (its opening quote); *escaped: 0 no escape, 1 only escapes orjson writes
 * alike (\" \\ \b \f \n \r \t), 2 another (\/, \u) */
static int scan_string(parser_t *s, int *escaped) {
    const unsigned char *start = (const unsigned char *)s->p;
    const unsigned char *p = start + 1, *end = (const unsigned char *)s->end;
    *escaped = 0;
    while (p < end) {
        /* eight bytes at a time up to the first one that is not plain (a quote, a backslash,
         * a control character or non-ASCII), which is read below, one character */
        while (end - p >= 8) {
            uint64_t w;
            memcpy(&w, p, 8);
            uint64_t m = special(w);
            if (m) {
                p += first_byte(m); /* the first byte in memory that is not plain */
                break;
            }
            p += 8;
        }
        if (p >= end) break;
        unsigned c = *p;
        if (c == '"') {
            p++;
            s->p = (const char *)p;
            return emit(s, (const char *)start, (size_t)(p - start));
        }
        if (c == '\\') {
            if (p + 1 >= end) return BAD;
            c = p[1];
            if (c == 'u') {
                if (end - p < 6 || !is_hex(p[2]) || !is_hex(p[3]) || !is_hex(p[4]) || !is_hex(p[5])) return BAD;
                p += 6;
                *escaped = 2;
            } else if (c == '/') {
                p += 2;
                *escaped = 2;
            } else if (c == '"' || c == '\\' || c == 'b' || c == 'f' || c == 'n' || c == 'r' || c == 't') {
                p += 2; /* as orjson writes the character */
                if (!*escaped) *escaped = 1;
            } else {
                return BAD;
            }
            continue;
        }
        if (c < 0x20) return BAD;
        if (c < 0x80) {
            p++;
            continue;
        }
        /* UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF */
        size_t more;
        unsigned lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF) {
            more = 1;
        } else if (c >= 0xE0 && c <= 0xEF) {
            more = 2;
            if (c == 0xE0) lo = 0xA0;
            if (c == 0xED) hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            more = 3;
            if (c == 0xF0) lo = 0x90;
            if (c == 0xF4) hi = 0x8F;
        } else {
            return BAD;
        }
        if ((size_t)(end - p) <= more) return BAD;
        if (p[1] < lo || p[1] > hi) return BAD;
        for (size_t i = 2; i <= more; i++) {
            if (p[i] < 0x80 || p[i] > 0xBF) return BAD;
        }
        p += more + 1;
    }
    return BAD;
}

static int scan_number(parser_t *s) {
    const char *start = s->p, *q = s->p, *end = s->end;
    int plain = 1, neg = 0;
    if (*q == '-') {
        neg = 1;
        q++;
    }
    if (q >= end) return BAD;
    if (*q == '0') {
        q++;
    } else if (*q >= '1' && *q <= '9') {
        while (q < end && *q >= '0' && *q <= '9') q++;
    } else {
        return BAD;
    }
    size_t digits = (size_t)(q - start) - (size_t)neg;
    if (neg && digits == 1 && start[1] == '0') plain = 0; /* -0 reads as 0 */
    if (digits > 18) plain = 0;
    if (q < end && *q == '.') {
        plain = 0;
        q++;
        if (q >= end || *q < '0' || *q > '9') return BAD;
        while (q < end && *q >= '0' && *q <= '9') q++;
    }
    if (q < end && (*q == 'e' || *q == 'E')) {
        plain = 0;
        q++;
        if (q < end && (*q == '+' || *q == '-')) q++;
        if (q >= end || *q < '0' || *q > '9') return BAD;
        while (q < end && *q >= '0' && *q <= '9') q++;
    }
    if (!plain) s->flags |= F_CANON;
    s->p = q;
    return emit(s, start, (size_t)(q - start));
}

static int scan_value(parser_t *s, int depth);

static int scan_literal(parser_t *s, const char *word, size_t n) {
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0) return BAD;
    s->p += n;
    return emit(s, word, n);
}

/* after an item of a container: a comma (1; the whitespace after it skipped) or the closing bracket (0) */
static int next_item(parser_t *s, char close) {
    skip_ws(s);
    if (s->p >= s->end) return BAD;
    if (*s->p == ',') {
        s->p++;
        if (emit(s, ",", 1)) return BAD;
        skip_ws(s);
        return 1;
    }
    if (*s->p == close) {
        s->p++;
        return emit(s, &close, 1) ? BAD : 0;
    }
    return BAD;
}

/* the opening bracket of an object or an array at s->p: 1 an item follows (s->p at it), 0 it
 * is empty (its closing bracket read too) */
static int opening(parser_t *s, char open, char close) {
    s->p++;
    if (emit(s, &open, 1)) return BAD;
    skip_ws(s);
    if (s->p < s->end && *s->p == close) {
        s->p++;
        return emit(s, &close, 1) ? BAD : 0;
    }
    return 1;
}

/* a member's key at s->p and the colon after it (s->p then at the value): *key and *len the
 * key's text with its quotes, *escaped as scan_string's */
static int scan_key(parser_t *s, const char **key, size_t *len, int *escaped) {
    if (s->p >= s->end || *s->p != '"') return BAD;
    *key = s->p;
    if (scan_string(s, escaped)) return BAD;
    *len = (size_t)(s->p - *key);
    skip_ws(s);
    if (s->p >= s->end || *s->p != ':') return BAD;
    s->p++;
    if (emit(s, ":", 1)) return BAD;
    skip_ws(s);
    return 0;
}

static int scan_object(parser_t *s, int depth) {
    const char *keys[MAX_KEYS];
    size_t key_len[MAX_KEYS];
    int n_keys = 0, escaped;
    if (depth > MAX_DEPTH) return BAD;
    int items = opening(s, '{', '}');
    if (items <= 0) return items;
    for (;;) {
        const char *key;
        size_t len;
        if (scan_key(s, &key, &len, &escaped)) return BAD;
        if (escaped == 2) s->flags |= F_CANON;
        if (n_keys < MAX_KEYS) {
            for (int i = 0; i < n_keys; i++) {
                if (key_len[i] == len && memcmp(keys[i], key, len) == 0) s->flags |= F_CANON;
            }
            keys[n_keys] = key;
            key_len[n_keys++] = len;
        } else {
            s->flags |= F_CANON; /* too many keys to look for a repeated one */
        }
        if (scan_value(s, depth)) return BAD;
        int more = next_item(s, '}');
        if (more <= 0) return more;
    }
}

static int scan_array(parser_t *s, int depth) {
    if (depth > MAX_DEPTH) return BAD;
    int items = opening(s, '[', ']');
    if (items <= 0) return items;
    for (;;) {
        if (scan_value(s, depth)) return BAD;
        int more = next_item(s, ']');
        if (more <= 0) return more;
    }
}

/* a value at s->p (no whitespace before it) */
static int scan_value(parser_t *s, int depth) {
    int escaped;
    if (s->p >= s->end) return BAD;
    switch (*s->p) {
    case '"':
        if (scan_string(s, &escaped)) return BAD;
        if (escaped == 2) s->flags |= F_CANON;
        return 0;
    case '{':
        return scan_object(s, depth + 1);
    case '[':
        return scan_array(s, depth + 1);
    case 't':
        return scan_literal(s, "true", 4);
    case 'f':
        return scan_literal(s, "false", 5);
    case 'n':
        return scan_literal(s, "null", 4);
    default:
        return scan_number(s);
    }
}

/* ------------------------------------------------------------------ bundle lines */

enum { K_OTHER, K_SCHEMA, K_NAME, K_PACKAGE, K_IMAGE, K_PROPERTIES };

static int key_of(const char *key, size_t len) {
    /* the key's text with its quotes, no escape in it */
    if (len == 8 && memcmp(key, "\"schema\"", 8) == 0) return K_SCHEMA;
    if (len == 6 && memcmp(key, "\"name\"", 6) == 0) return K_NAME;
    if (len == 9 && memcmp(key, "\"package\"", 9) == 0) return K_PACKAGE;
    if (len == 7 && memcmp(key, "\"image\"", 7) == 0) return K_IMAGE;
    if (len == 12 && memcmp(key, "\"properties\"", 12) == 0) return K_PROPERTIES;
    return K_OTHER;
}

/* one property object at s->p: kept in pv->props when plain; *usual cleared otherwise */
static int scan_property(priv_t *pv, parser_t *s, int depth, int *usual) {
    int escaped, have_type = 0, have_value = 0, plain = 1;
    prop_t prop = {0};
    int items = opening(s, '{', '}');
    if (items <= 0) {
        if (!items) *usual = 0;
        return items;
    }
    for (;;) {
        const char *key;
        size_t len;
        if (scan_key(s, &key, &len, &escaped)) return BAD;
        if (!escaped && len == 6 && memcmp(key, "\"type\"", 6) == 0) {
            if (have_type) plain = 0;
            have_type = 1;
            const char *v = s->p;
            if (s->p < s->end && *s->p == '"') {
                if (scan_string(s, &escaped)) return BAD;
                prop.type = v + 1;
                prop.type_len = (int)(s->p - v - 2);
                if (escaped || prop.type_len == 0) plain = 0;
            } else {
                if (scan_value(s, depth)) return BAD;
                plain = 0;
            }
        } else if (!escaped && len == 7 && memcmp(key, "\"value\"", 7) == 0) {
            if (have_value) plain = 0;
            if (!have_type) prop.flags |= F_VALUE_FIRST;
            have_value = 1;
            prop.value_off = pv->scratch.n;
            s->out = &pv->scratch;
            s->flags = 0;
            int rc = scan_value(s, depth);
            s->out = NULL;
            if (rc) return BAD;
            prop.value_len = (int)(pv->scratch.n - prop.value_off);
            prop.flags |= s->flags;
        } else {
            if (scan_value(s, depth)) return BAD;
            plain = 0;
        }
        int more = next_item(s, '}');
        if (more < 0) return BAD;
        if (!more) break;
    }
    if (!plain || !have_type || !have_value) {
        *usual = 0;
        return 0;
    }
    if (grow((void **)&pv->props, &pv->props_cap, pv->n_props + 1, sizeof(prop_t))) {
        s->oom = 1;
        return BAD;
    }
    pv->props[pv->n_props++] = prop;
    return 0;
}

static int scan_properties(priv_t *pv, parser_t *s, int *usual) {
    if (s->p < s->end && *s->p == 'n') return scan_value(s, 0); /* null: no properties */
    if (s->p >= s->end || *s->p != '[') {
        *usual = 0;
        return scan_value(s, 0);
    }
    int items = opening(s, '[', ']');
    if (items <= 0) return items;
    for (;;) {
        if (s->p < s->end && *s->p == '{') {
            if (scan_property(pv, s, 2, usual)) return BAD;
        } else {
            *usual = 0;
            if (scan_value(s, 1)) return BAD;
        }
        int more = next_item(s, ']');
        if (more <= 0) return more;
    }
}

static uint64_t hash_of(int flags, const char *type, size_t type_len, const char *value, size_t value_len) {
    uint64_t h = olm_hash_raw(OLM_HASH_SEED ^ (uint64_t)flags, type, type_len);
    return olm_hash_fmix(olm_hash_raw(h, value, value_len));
}

/* the distinct properties' table: a slot holds the high half of the hash over the number + 1
 * (0 empty), so that a probe rejects another property without reading its hash */
#define SLOT(h, d) (((h) & 0xFFFFFFFF00000000ULL) | (uint64_t)(unsigned)((d) + 1))

static int rehash(olm_scan *sc, priv_t *pv, size_t cap) {
    uint64_t *table = calloc(cap, sizeof(uint64_t));
    if (!table) return 1;
    for (int d = 0; d < sc->n_dist; d++) {
        size_t i = (size_t)pv->d_hash[d] & (cap - 1);
        while (table[i]) i = (i + 1) & (cap - 1);
        table[i] = SLOT(pv->d_hash[d], d);
    }
    free(pv->table);
    pv->table = table;
    pv->table_cap = cap;
    return 0;
}

/* ------------------------------------------------------------------ interned texts */

/* the number of a text in t, added when new (-1 out of memory) */
static int string_of(strings_t *t, const char *p, size_t n) {
    uint64_t h = olm_hash_bytes(OLM_HASH_SEED, p, n);
    h ^= h >> 29;
    if (olm_table_room(&t->table, &t->table_cap, t->hash, t->n)) return -1;
    size_t mask = t->table_cap - 1, i = (size_t)h & mask;
    for (; t->table[i]; i = (i + 1) & mask) {
        size_t k = (size_t)t->table[i] - 1;
        size_t len = (k + 1 < t->n ? t->off[k + 1] : t->text.n) - t->off[k] - 1;
        if (t->hash[k] == h && len == n && memcmp(t->text.v + t->off[k], p, n) == 0) return (int)k;
    }
    if (t->n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 1024;
        size_t *off = realloc(t->off, cap * sizeof(size_t));
        if (off) t->off = off;
        uint64_t *hh = realloc(t->hash, cap * sizeof(uint64_t));
        if (hh) t->hash = hh;
        if (!off || !hh) return -1;
        t->cap = cap;
    }
    t->off[t->n] = t->text.n;
    if (put_bytes(&t->text, p, n) || put_bytes(&t->text, "\n", 1)) return -1;
    t->hash[t->n] = h;
    t->table[i] = (int)t->n + 1;
    return (int)t->n++;
}

static void strings_free(strings_t *t) {
    free(t->text.v);
    free(t->off);
    free(t->hash);
    free(t->table);
}

/* the number of the key (type, strs[0:n]), added when new (-1 out of memory) */
static int key_of_strings(priv_t *pv, int type, const int *strs, int n) {
    uint64_t h = OLM_HASH_SEED ^ (uint64_t)(unsigned)type;
    for (int j = 0; j < n; j++) h = (h ^ (uint64_t)(unsigned)strs[j]) * 1099511628211ULL;
    h ^= h >> 29;
    size_t n_keys = pv->key_type.n;
    if (olm_table_room(&pv->key_table, &pv->key_table_cap, pv->key_hash, n_keys)) return -1;
    size_t mask = pv->key_table_cap - 1, i = (size_t)h & mask;
    for (; pv->key_table[i]; i = (i + 1) & mask) {
        size_t k = (size_t)pv->key_table[i] - 1;
        int at = pv->key_start.v[k], len = pv->key_start.v[k + 1] - at;
        if (pv->key_hash[k] == h && pv->key_type.v[k] == type && len == n &&
            memcmp(pv->key_strs.v + at, strs, (size_t)n * sizeof(int)) == 0)
            return (int)k;
    }
    if (grow((void **)&pv->key_hash, &pv->key_hash_cap, n_keys + 1, sizeof(uint64_t))) return -1;
    if (!pv->key_start.n && put_int(&pv->key_start, 0)) return -1;
    for (int j = 0; j < n; j++) {
        if (put_int(&pv->key_strs, strs[j])) return -1;
    }
    if (put_int(&pv->key_type, type) || put_int(&pv->key_start, (int)pv->key_strs.n)) return -1;
    pv->key_hash[n_keys] = h;
    pv->key_table[i] = (int)n_keys + 1;
    return (int)n_keys;
}

/* the number of a type (in the order met), added when new (-1 out of memory) */
static int type_of(priv_t *pv, const char *type, int len) {
    int *seen = &pv->type_seen[len & 7];
    if (*seen) { /* the few types of a catalog come again and again: no hash for them */
        strings_t *t = &pv->types;
        size_t k = (size_t)*seen - 1, at = t->off[k];
        size_t n = (k + 1 < t->n ? t->off[k + 1] : t->text.n) - at - 1;
        if (n == (size_t)len && memcmp(t->text.v + at, type, n) == 0) return (int)k;
    }
    size_t known = pv->types.n;
    int t = string_of(&pv->types, type, (size_t)len);
    if (t >= 0) *seen = t + 1;
    if (t < 0 || (size_t)t < known) return t;
    if (grow((void **)&pv->type_kind, &pv->type_kind_cap, (size_t)t + 1, sizeof(int))) return -1;
    pv->type_kind[t] = -1;
    for (size_t k = 0; k < pv->n_kinds; k++) {
        if (pv->kinds[k].len == len && memcmp(pv->kinds[k].name, type, (size_t)len) == 0) pv->type_kind[t] = (int)k;
    }
    return t;
}

/* Read a plain value of a kind's fields from its text without whitespace: an object of
 * exactly its fields, each once, each a string without escape, non-empty unless allowed.
 * Fills str (the strings' numbers, in field order); 1 plain, 0 not, -1 out of memory. */
static int read_fields(priv_t *pv, const kind_t *k, const char *p, const char *end, int *str) {
    const char *at[MAX_FIELDS];
    size_t len[MAX_FIELDS];
    unsigned seen = 0;
    if (p >= end || *p != '{') return 0;
    p++;
    if (p < end && *p == '}') return k->n_fields == 0;
    for (;;) {
        if (p >= end || *p != '"') return 0;
        const char *key = ++p;
        while (p < end && *p != '"' && *p != '\\') p++;
        if (p >= end || *p != '"') return 0;
        size_t key_len = (size_t)(p - key);
        p++;
        if (p >= end || *p != ':') return 0;
        p++;
        int f = -1;
        for (int j = 0; j < k->n_fields; j++) {
            if ((size_t)k->field_len[j] == key_len && memcmp(k->field[j], key, key_len) == 0) f = j;
        }
        if (f < 0 || (seen & (1u << f)) || p >= end || *p != '"') return 0;
        seen |= 1u << f;
        const char *v = ++p;
        while (p < end && *p != '"' && *p != '\\') p++;
        if (p >= end || *p != '"') return 0;
        at[f] = v;
        len[f] = (size_t)(p - v);
        if (!len[f] && !(k->empty_mask & (1u << f))) return 0;
        p++;
        if (p < end && *p == ',') {
            p++;
            continue;
        }
        if (p < end && *p == '}' && p + 1 == end) break;
        return 0;
    }
    if (seen != (1u << k->n_fields) - 1) return 0;
    for (int j = 0; j < k->n_fields; j++) {
        str[j] = string_of(&pv->strings, at[j], len[j]);
        if (str[j] < 0) return -1;
    }
    return 1;
}

/* the distinct property of (flags, type, value), -1 none */
static int find(const olm_scan *sc, const priv_t *pv, int flags, const char *type, int type_len, const char *value,
                int value_len, uint64_t h) {
    if (!pv->table_cap) return -1;
    size_t mask = pv->table_cap - 1, i = (size_t)h & mask;
    for (uint64_t slot; (slot = pv->table[i]) != 0; i = (i + 1) & mask) {
        if ((slot ^ h) >> 32) continue;
        int d = (int)(uint32_t)slot - 1;
        if ((sc->d_flags[d] & ~F_ODD) == flags && sc->d_type_len[d] == type_len &&
            sc->d_value_len[d] == value_len) {
            const char *at = pv->arena.v + sc->d_start[d];
            if (memcmp(at, type, (size_t)type_len) == 0 && memcmp(at + type_len, value, (size_t)value_len) == 0)
                return d;
        }
    }
    return -1;
}

static int grow_dist(olm_scan *sc, priv_t *pv, size_t need) {
    size_t cap = pv->d_cap;
    if (need <= cap) return 0;
    size_t cap2 = cap ? cap * 2 : 4096;
    while (cap2 < need) cap2 *= 2;
    uint64_t *hh = realloc(pv->d_hash, cap2 * sizeof(uint64_t));
    if (hh) pv->d_hash = hh;
    size_t *st = realloc(sc->d_start, cap2 * sizeof(size_t));
    if (st) sc->d_start = st;
    int *ints[5] = {NULL};
    int **where[5] = {&sc->d_type_len, &sc->d_value_len, &sc->d_type, &sc->d_key, &sc->d_version};
    int ok = hh && st;
    for (int j = 0; j < 5; j++) {
        ints[j] = realloc(*where[j], cap2 * sizeof(int));
        if (ints[j]) *where[j] = ints[j];
        else ok = 0;
    }
    unsigned char *fl = realloc(sc->d_flags, cap2);
    if (fl) sc->d_flags = fl;
    if (!ok || !fl) return 1;
    pv->d_cap = cap2;
    return 0;
}

/* the distinct property of prop (value text in the scratch buffer), added when new; -1 out of memory */
static int intern(olm_scan *sc, priv_t *pv, const prop_t *prop) {
    const char *value = pv->scratch.v + prop->value_off;
    int t = type_of(pv, prop->type, prop->type_len);
    if (t < 0) return -1;
    const kind_t *k = pv->type_kind[t] >= 0 ? &pv->kinds[pv->type_kind[t]] : NULL;
    int flags = prop->flags;
    if (k && (k->kind & K_IDENTITY)) flags &= ~F_VALUE_FIRST; /* an identity is its text, whatever its form */
    uint64_t h = flags == prop->flags ? prop->hash
                                      : hash_of(flags, prop->type, (size_t)prop->type_len, value, (size_t)prop->value_len);
    if ((size_t)(sc->n_dist + 1) * 2 > pv->table_cap && rehash(sc, pv, pv->table_cap ? pv->table_cap * 2 : 4096))
        return -1;
    int found = find(sc, pv, flags, prop->type, prop->type_len, value, prop->value_len, h);
    if (found >= 0) return found;
    int d = sc->n_dist;
    if (grow_dist(sc, pv, (size_t)d + 1)) return -1;
    size_t start = pv->arena.n;
    if (put_bytes(&pv->arena, prop->type, (size_t)prop->type_len) ||
        put_bytes(&pv->arena, value, (size_t)prop->value_len) ||
        put_bytes(&pv->new_texts, value, (size_t)prop->value_len) || put_bytes(&pv->new_texts, "\n", 1))
        return -1;
    int key = -1, version = -1, odd = (flags & F_CANON) != 0;
    if (!odd && k && (k->kind & (K_FIELDS | K_ODD))) {
        int str[MAX_FIELDS];
        int plain = (k->kind & K_ODD) ? 0 : read_fields(pv, k, value, value + prop->value_len, str);
        if (plain < 0) return -1;
        if (plain) {
            key = key_of_strings(pv, t, str, k->key_fields);
            if (key < 0) return -1;
            if (k->kind & K_IDENTITY) version = str[1];
        } else {
            odd = 1;
        }
    }
    if (!(flags & F_CANON) && !(k && (k->kind & K_IDENTITY))) {
        /* the same property written the other way round */
        int other = flags ^ F_VALUE_FIRST;
        uint64_t h2 = hash_of(other, prop->type, (size_t)prop->type_len, value, (size_t)prop->value_len);
        if (find(sc, pv, other, prop->type, prop->type_len, value, prop->value_len, h2) >= 0) sc->two_ways = 1;
    }
    if (odd && put_int(&pv->odd, d)) return -1;
    pv->d_hash[d] = h;
    sc->d_start[d] = start;
    sc->d_type_len[d] = prop->type_len;
    sc->d_value_len[d] = prop->value_len;
    sc->d_flags[d] = (unsigned char)(flags | (odd ? F_ODD : 0));
    sc->d_type[d] = t;
    sc->d_key[d] = key;
    sc->d_version[d] = version;
    sc->n_dist = d + 1;
    /* the slot find stopped at is still the first empty one of the probe */
    size_t mask = pv->table_cap - 1, i = (size_t)h & mask;
    while (pv->table[i]) i = (i + 1) & mask;
    pv->table[i] = SLOT(h, d);
    return d;
}

int olm_scan_find(olm_scan *sc, const char *type, int type_len, const char *text, int text_len, int value_first) {
    priv_t *pv = sc->priv;
    int flags = value_first ? F_VALUE_FIRST : 0;
    for (size_t t = 0; t < pv->n_kinds; t++) {
        if (pv->kinds[t].len == type_len && memcmp(pv->kinds[t].name, type, (size_t)type_len) == 0 &&
            (pv->kinds[t].kind & K_IDENTITY))
            flags = 0;
    }
    uint64_t h = hash_of(flags, type, (size_t)type_len, text, (size_t)text_len);
    return find(sc, pv, flags, type, type_len, text, text_len, h);
}

/* ------------------------------------------------------------------ bundles met */

static uint64_t bundle_hash(const char *package, size_t pl, const char *name, size_t nl) {
    uint64_t h = olm_hash_bytes(OLM_HASH_SEED, package, pl);
    h = (h ^ 0xFF) * 1099511628211ULL;
    h = olm_hash_bytes(h, name, nl);
    return h ^ (h >> 29);
}

static int bh_rehash(priv_t *pv, size_t cap) {
    int *table = olm_table_of(pv->bh, pv->n_bh, cap);
    if (!table) return 1;
    free(pv->bh_table);
    pv->bh_table = table;
    pv->bh_table_cap = cap;
    return 0;
}

/* add a bundle by the hash of its package and name: 0 new, 1 met before (or a hash met before), -1 out of memory */
static int bundle_met(priv_t *pv, uint64_t h) {
    if (olm_table_room(&pv->bh_table, &pv->bh_table_cap, pv->bh, pv->n_bh)) return -1;
    size_t mask = pv->bh_table_cap - 1, i = (size_t)h & mask;
    for (; pv->bh_table[i]; i = (i + 1) & mask) {
        if (pv->bh[pv->bh_table[i] - 1] == h) return 1;
    }
    if (grow((void **)&pv->bh, &pv->bh_cap, pv->n_bh + 1, sizeof(uint64_t))) return -1;
    pv->bh[pv->n_bh++] = h;
    pv->bh_table[i] = (int)pv->n_bh;
    return 0;
}

int olm_scan_bundle(olm_scan *sc, const char *package, int pl, const char *name, int nl) {
    priv_t *pv = sc->priv;
    return bundle_met(pv, bundle_hash(package, (size_t)pl, name, (size_t)nl));
}

typedef struct {
    const char *at;
    size_t len;
} span_t;

enum { LINE_TAKEN = 0, LINE_OTHER = 1, LINE_BAD = 2, LINE_OOM = 3 };

static int scan_line(olm_scan *sc, priv_t *pv, const char *p, const char *end, int line) {
    parser_t s = {p, end, NULL, 0, 0};
    span_t field[6] = {{0}};
    int seen = 0, usual = 1, escaped_field = 0, escaped;
    pv->n_props = 0;
    pv->scratch.n = 0;
    skip_ws(&s);
    if (s.p >= s.end) return LINE_BAD;
    if (*s.p != '{') {
        if (scan_value(&s, 0)) return s.oom ? LINE_OOM : LINE_BAD;
        skip_ws(&s);
        return s.p == s.end ? LINE_OTHER : LINE_BAD;
    }
    int items = opening(&s, '{', '}'); /* nothing written: never BAD */
    if (!items) {
        usual = 0;
    } else {
        for (;;) {
            const char *key;
            size_t len;
            if (scan_key(&s, &key, &len, &escaped)) return LINE_BAD;
            int k = escaped ? K_OTHER : key_of(key, len);
            if (k != K_OTHER) {
                if (seen & (1 << k)) usual = 0;
                seen |= 1 << k;
            }
            if (k == K_PROPERTIES) {
                if (scan_properties(pv, &s, &usual)) return s.oom ? LINE_OOM : LINE_BAD;
            } else if (k != K_OTHER && s.p < s.end && *s.p == '"') {
                const char *v = s.p;
                if (scan_string(&s, &escaped)) return LINE_BAD;
                field[k].at = v + 1;
                field[k].len = (size_t)(s.p - v - 2);
                if (escaped) escaped_field |= 1 << k;
            } else {
                int null = s.p < s.end && *s.p == 'n';
                if (scan_value(&s, 0)) return s.oom ? LINE_OOM : LINE_BAD;
                if (!(k == K_IMAGE && null)) usual = 0;
            }
            int more = next_item(&s, '}');
            if (more < 0) return s.oom ? LINE_OOM : LINE_BAD;
            if (!more) break;
        }
    }
    skip_ws(&s);
    if (s.p != s.end) return LINE_BAD;
    if (!usual || escaped_field || (seen & (1 << K_SCHEMA)) == 0 || field[K_SCHEMA].len != 10 ||
        memcmp(field[K_SCHEMA].at, "olm.bundle", 10) != 0 || field[K_NAME].len == 0 || field[K_PACKAGE].len == 0)
        return LINE_OTHER;
    /* a plain bundle: taken. First each property's hash and the slot its probe starts at asked
     * for, so that the table's cache misses overlap instead of coming one after another */
    if (pv->table_cap) {
        size_t mask = pv->table_cap - 1;
        for (size_t i = 0; i < pv->n_props; i++) {
            prop_t *prop = &pv->props[i];
            prop->hash = hash_of(prop->flags, prop->type, (size_t)prop->type_len, pv->scratch.v + prop->value_off,
                                 (size_t)prop->value_len);
            PREFETCH(&pv->table[prop->hash & mask]);
        }
    } else {
        for (size_t i = 0; i < pv->n_props; i++) {
            prop_t *prop = &pv->props[i];
            prop->hash = hash_of(prop->flags, prop->type, (size_t)prop->type_len, pv->scratch.v + prop->value_off,
                                 (size_t)prop->value_len);
        }
    }
    uint64_t bh = bundle_hash(field[K_PACKAGE].at, field[K_PACKAGE].len, field[K_NAME].at, field[K_NAME].len);
    if (pv->bh_table_cap) PREFETCH(&pv->bh_table[bh & (pv->bh_table_cap - 1)]);
    int b = sc->n_bundles;
    if (put_int(&pv->line_kind, b) || put_int(&pv->b_line, line) ||
        put_bytes(&pv->names, field[K_NAME].at, field[K_NAME].len) || put_bytes(&pv->names, "\n", 1) ||
        put_bytes(&pv->images, field[K_IMAGE].at, field[K_IMAGE].len) || put_bytes(&pv->images, "\n", 1))
        return LINE_OOM;
    int package = -1;
    if (pv->last_package) { /* a file's bundles are mostly of one package: no hash for them */
        strings_t *t = &pv->packages;
        size_t k = (size_t)pv->last_package - 1, at = t->off[k];
        size_t len = (k + 1 < t->n ? t->off[k + 1] : t->text.n) - at - 1;
        if (len == field[K_PACKAGE].len && memcmp(t->text.v + at, field[K_PACKAGE].at, len) == 0) package = (int)k;
    }
    if (package < 0) package = string_of(&pv->packages, field[K_PACKAGE].at, field[K_PACKAGE].len);
    if (package >= 0) pv->last_package = package + 1;
    if (package < 0 || put_int(&pv->b_pkg, package)) return LINE_OOM;
    int met = bundle_met(pv, bh);
    if (met < 0) return LINE_OOM;
    if (met) sc->duplicate = 1;
    for (size_t i = 0; i < pv->n_props; i++) {
        int d = intern(sc, pv, &pv->props[i]);
        if (d < 0 || put_int(&pv->occ, d)) return LINE_OOM;
    }
    if (put_int(&pv->b_prop_start, (int)pv->occ.n) || put_int(&pv->b_ndist, sc->n_dist)) return LINE_OOM;
    sc->n_bundles = b + 1;
    return LINE_TAKEN;
}

/* ------------------------------------------------------------------ the handle */

olm_scan *olm_scan_new(void) {
    olm_scan *sc = calloc(1, sizeof(olm_scan));
    priv_t *pv = calloc(1, sizeof(priv_t));
    if (!sc || !pv) {
        free(sc);
        free(pv);
        return NULL;
    }
    sc->priv = pv;
    return sc;
}

void olm_scan_free(olm_scan *sc) {
    if (!sc) return;
    priv_t *pv = sc->priv;
    bytes_t *bufs[] = {&pv->names, &pv->images, &pv->arena, &pv->scratch, &pv->new_texts};
    ints_t *ints[] = {&pv->line_kind, &pv->line_start, &pv->line_end, &pv->b_line, &pv->b_prop_start,
                      &pv->b_ndist,   &pv->occ,        &pv->odd,      &pv->key_type, &pv->key_start,
                      &pv->key_strs,  &pv->b_pkg};
    for (size_t i = 0; i < sizeof(bufs) / sizeof(*bufs); i++) free(bufs[i]->v);
    for (size_t i = 0; i < sizeof(ints) / sizeof(*ints); i++) free(ints[i]->v);
    free(pv->d_hash);
    free(pv->table);
    free(pv->props);
    for (size_t i = 0; i < pv->n_kinds; i++) {
        free(pv->kinds[i].name);
        for (int j = 0; j < pv->kinds[i].n_fields; j++) free(pv->kinds[i].field[j]);
    }
    free(pv->kinds);
    strings_free(&pv->types);
    strings_free(&pv->strings);
    strings_free(&pv->packages);
    free(pv->bh);
    free(pv->bh_table);
    free(pv->type_kind);
    free(pv->key_hash);
    free(pv->key_table);
    free(pv);
    free(sc->d_start);
    free(sc->d_type_len);
    free(sc->d_value_len);
    free(sc->d_flags);
    free(sc->d_type);
    free(sc->d_key);
    free(sc->d_version);
    free(sc);
}

static void publish(olm_scan *sc, priv_t *pv) {
    sc->n_lines = (int)pv->line_kind.n;
    sc->n_occ = (int)pv->occ.n;
    sc->line_kind = pv->line_kind.v;
    sc->line_start = pv->line_start.v;
    sc->line_end = pv->line_end.v;
    sc->b_line = pv->b_line.v;
    sc->b_prop_start = pv->b_prop_start.v;
    sc->b_ndist = pv->b_ndist.v;
    sc->occ = pv->occ.v;
    sc->names = pv->names.v;
    sc->b_pkg = pv->b_pkg.v;
    sc->n_packages = (int)pv->packages.n;
    sc->new_packages = pv->packages.text.v;
    sc->new_packages_len = pv->packages.text.n;
    sc->images = pv->images.v;
    sc->names_len = pv->names.n;
    sc->images_len = pv->images.n;
    sc->arena = pv->arena.v;
    sc->arena_len = pv->arena.n;
    sc->new_texts = pv->new_texts.v;
    sc->new_texts_len = pv->new_texts.n;
    sc->odd = pv->odd.v;
    sc->n_odd = (int)pv->odd.n;
    /* the tables: from the caller's count of what it read (types_first etc. are its to keep) */
    sc->n_types = (int)pv->types.n;
    sc->new_types = pv->types.text.v;
    sc->new_types_len = pv->types.text.n;
    sc->n_strings = (int)pv->strings.n;
    sc->new_strings = pv->strings.text.v;
    sc->new_strings_len = pv->strings.text.n;
    sc->n_keys = (int)pv->key_type.n;
    sc->key_type = pv->key_type.v;
    sc->key_start = pv->key_start.v;
    sc->key_strs = pv->key_strs.v;
}

int olm_scan_type(olm_scan *sc, const char *type, int len, int kind, const char *fields, int n_fields, int key_fields,
                  unsigned empty_mask) {
    priv_t *pv = sc->priv;
    if (len <= 0 || n_fields < 0 || n_fields > MAX_FIELDS || key_fields < 0 || key_fields > n_fields ||
        ((kind & K_IDENTITY) && (kind & K_FIELDS) && n_fields < 2) || sc->n_dist)
        return 2;
    if (grow((void **)&pv->kinds, &pv->kinds_cap, pv->n_kinds + 1, sizeof(kind_t))) return 1;
    kind_t *k = &pv->kinds[pv->n_kinds];
    memset(k, 0, sizeof(*k));
    k->name = malloc((size_t)len);
    if (!k->name) return 1;
    memcpy(k->name, type, (size_t)len);
    k->len = len;
    k->kind = kind;
    k->key_fields = key_fields;
    k->empty_mask = empty_mask;
    const char *p = fields;
    for (int j = 0; j < n_fields; j++) {
        const char *nl = strchr(p, '\n');
        if (!nl) {
            for (int i = 0; i < j; i++) free(k->field[i]);
            free(k->name);
            return 2;
        }
        k->field[j] = malloc((size_t)(nl - p) + 1);
        if (!k->field[j]) {
            for (int i = 0; i < j; i++) free(k->field[i]);
            free(k->name);
            return 1;
        }
        memcpy(k->field[j], p, (size_t)(nl - p));
        k->field_len[j] = (int)(nl - p);
        p = nl + 1;
    }
    k->n_fields = n_fields;
    pv->n_kinds++;
    return 0;
}

/* where the outputs stood before a file: what its rollback returns them to */
typedef struct {
    size_t line_kind, line_start, line_end, b_line, b_prop_start, b_ndist, occ, names, images, b_pkg;
    size_t arena, new_texts, odd, bh;
    int n_dist, n_bundles;
} marks_t;

/* scan one file, its outputs appended to those of the files before it (b_prop_start already
 * holds the offset its first bundle starts at); on failure (1 out of memory, 2 not taken)
 * everything it added is forgotten but its types, strings and keys (the caller reads them
 * in order, and they are found again as they were). *left and *prefix: how many lines it
 * left to the caller, and how many of them come before its first bundle line. */
static int scan_append(olm_scan *sc, priv_t *pv, const char *data, size_t n, int *left, int *prefix) {
    marks_t m = {pv->line_kind.n, pv->line_start.n, pv->line_end.n, pv->b_line.n, pv->b_prop_start.n,
                 pv->b_ndist.n,   pv->occ.n,        pv->names.n,    pv->images.n, pv->b_pkg.n,
                 pv->arena.n,     pv->new_texts.n,  pv->odd.n,      pv->n_bh,     sc->n_dist,
                 sc->n_bundles};
    int rc = 0, n_left = 0, before = 0, bundles = 0;
    if (n > INT_MAX / 2) return 2;
    size_t body = n;
    while (body > 0 && data[body - 1] == '\n') body--;
    size_t start = 0;
    int line = 0;
    while (body > 0 && start <= body) {
        const char *nl = memchr(data + start, '\n', body - start);
        size_t stop = nl ? (size_t)(nl - data) : body;
        line++;
        int kind = scan_line(sc, pv, data + start, data + stop, line);
        if (kind == LINE_OOM) {
            rc = 1;
            break;
        }
        if (kind == LINE_BAD) {
            rc = 2;
            break;
        }
        if (kind == LINE_OTHER) {
            if (put_int(&pv->line_kind, -1)) {
                rc = 1;
                break;
            }
            n_left++;
            if (!bundles) before++;
        } else {
            bundles = 1;
        }
        if (put_int(&pv->line_start, (int)start) || put_int(&pv->line_end, (int)stop)) {
            rc = 1;
            break;
        }
        if (!nl) break;
        start = stop + 1;
    }
    if (rc) {
        sc->n_dist = m.n_dist;
        sc->n_bundles = m.n_bundles;
        pv->line_kind.n = m.line_kind;
        pv->line_start.n = m.line_start;
        pv->line_end.n = m.line_end;
        pv->b_line.n = m.b_line;
        pv->b_prop_start.n = m.b_prop_start;
        pv->b_ndist.n = m.b_ndist;
        pv->occ.n = m.occ;
        pv->names.n = m.names;
        pv->images.n = m.images;
        pv->b_pkg.n = m.b_pkg;
        pv->arena.n = m.arena;
        pv->new_texts.n = m.new_texts;
        pv->odd.n = m.odd;
        pv->n_bh = m.bh;
        if (pv->table_cap && rehash(sc, pv, pv->table_cap)) rc = 1;
        if (pv->bh_table_cap && bh_rehash(pv, pv->bh_table_cap)) rc = 1;
    }
    *left = n_left;
    *prefix = before;
    return rc;
}

/* forget the last call's outputs (not the distinct properties, tables and bundles met) */
static int start_outputs(olm_scan *sc, priv_t *pv) {
    sc->arena_first = pv->arena.n;
    pv->new_texts.n = 0;
    pv->odd.n = 0;
    pv->line_kind.n = pv->line_start.n = pv->line_end.n = pv->b_line.n = pv->occ.n = pv->b_ndist.n = 0;
    pv->b_prop_start.n = 0;
    pv->names.n = pv->images.n = pv->b_pkg.n = 0;
    sc->n_bundles = 0;
    return put_int(&pv->b_prop_start, 0);
}

int olm_scan_file(olm_scan *sc, const char *data, size_t n) {
    priv_t *pv = sc->priv;
    int left, prefix;
    if (start_outputs(sc, pv)) return 1;
    int rc = scan_append(sc, pv, data, n, &left, &prefix);
    publish(sc, pv);
    if (rc) sc->n_lines = 0;
    return rc;
}

int olm_scan_files(olm_scan *sc, const char *const *data, const size_t *n, int n_files, int *out) {
    priv_t *pv = sc->priv;
    if (start_outputs(sc, pv)) return 1;
    for (int f = 0; f < n_files; f++) {
        int left = 0, prefix = 0;
        int rc = scan_append(sc, pv, data[f], n[f], &left, &prefix);
        if (rc == 1) {
            publish(sc, pv);
            return 1;
        }
        int *o = out + (size_t)f * OLM_SCAN_FILE_INTS;
        o[0] = rc;
        o[1] = (int)pv->line_kind.n;
        o[2] = sc->n_bundles;
        o[3] = left;
        o[4] = prefix;
        o[5] = (sc->duplicate ? 1 : 0) | (sc->two_ways ? 2 : 0);
    }
    publish(sc, pv);
    return 0;
}

/* ------------------------------------------------------------------ rows' index */

int olm_rows_index(const int *row_start, const int *refs, int n_rows, int n_dist, const int *value, const int *d_list,
                   const int *ex_start, const int *ex_lists, int n_ex, int n_lists, int *first_out, int *list_start_out,
                   int *rows_out) {
    int *last = malloc(((size_t)n_lists + 1) * sizeof(int));
    if (!last) return 1;
    for (int l = 0; l <= n_lists; l++) list_start_out[l] = 0;
    for (int l = 0; l < n_lists; l++) last[l] = -1;
    /* count each list's rows (into list_start_out[l + 1]) and find each row's first value */
    for (int r = 0; r < n_rows; r++) {
        int found = -1;
        for (int i = row_start[r]; i < row_start[r + 1]; i++) {
            int d = refs[i];
            if (d < 0 || d >= n_dist) goto out_of_range;
            if (found == -1 && value[d] != -1) found = value[d];
            int dl = d_list[d], lo = 0, hi = 0;
            if (dl >= 0) {
                lo = -1;
            } else if (dl <= -2) {
                int e = -2 - dl;
                if (e >= n_ex) goto out_of_range;
                lo = ex_start[e];
                hi = ex_start[e + 1];
            }
            for (int j = lo; j < hi || lo == -1; j++) {
                int l = lo == -1 ? dl : ex_lists[j];
                if (l < 0 || l >= n_lists) goto out_of_range;
                if (last[l] != r) {
                    last[l] = r;
                    list_start_out[l + 1]++;
                }
                if (lo == -1) break;
            }
        }
        first_out[r] = found;
    }
    for (int l = 0; l < n_lists; l++) {
        list_start_out[l + 1] += list_start_out[l];
        last[l] = -1;
    }
    /* fill: last[l] now the row last filed, and list_start_out[l] moves as rows are filed */
    {
        int *at = malloc(((size_t)n_lists + 1) * sizeof(int));
        if (!at) {
            free(last);
            return 1;
        }
        memcpy(at, list_start_out, ((size_t)n_lists + 1) * sizeof(int));
        for (int r = 0; r < n_rows; r++) {
            for (int i = row_start[r]; i < row_start[r + 1]; i++) {
                int dl = d_list[refs[i]], lo = 0, hi = 0;
                if (dl >= 0) {
                    lo = -1;
                } else if (dl <= -2) {
                    lo = ex_start[-2 - dl];
                    hi = ex_start[-1 - dl];
                }
                for (int j = lo; j < hi || lo == -1; j++) {
                    int l = lo == -1 ? dl : ex_lists[j];
                    if (last[l] != r) {
                        last[l] = r;
                        rows_out[at[l]++] = r;
                    }
                    if (lo == -1) break;
                }
            }
        }
        free(at);
    }
    free(last);
    return 0;
out_of_range:
    free(last);
    return 2;
}
