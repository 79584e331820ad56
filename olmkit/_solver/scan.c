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
 * flagged (flag 2) for the caller to canonicalise: an escape in a string, a number other than
 * an integer of at most 18 digits (fractions, exponents, -0, large), a repeated key in an object
 * (or an object too large to check for one).
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "scan.h"

#define MAX_DEPTH 64
#define MAX_KEYS 32
#define F_VALUE_FIRST 1
#define F_CANON 2
#define F_FRESH 4 /* a property of a type not interned: its text is in the file's arena */

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
} prop_t;

typedef struct {
    bytes_t names, packages, images, arena, farena, scratch;
    /* the types whose properties are not interned (each occurrence its own distinct property) */
    char **fresh;
    int *fresh_len;
    size_t n_fresh, fresh_cap, fresh_len_cap;
    ints_t line_kind, line_start, line_end, b_line, b_prop_start, b_ndist, occ;
    size_t d_cap;
    uint64_t *d_hash;
    int *table; /* distinct + 1, 0 for an empty slot */
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

static int put_bytes(bytes_t *b, const char *p, size_t n) {
    if (grow((void **)&b->v, &b->cap, b->n + n + 1, 1)) return 1;
    memcpy(b->v + b->n, p, n);
    b->n += n;
    return 0;
}

static int put_int(ints_t *a, int x) {
    if (grow((void **)&a->v, &a->cap, a->n + 1, sizeof(int))) return 1;
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

static inline void skip_ws(parser_t *s) {
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\r')) s->p++;
}

static inline int emit(parser_t *s, const char *p, size_t n) {
    if (s->out && put_bytes(s->out, p, n)) {
        s->oom = 1;
        return BAD;
    }
    return 0;
}

static inline int is_hex(unsigned char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* a string at s->p (its opening quote); *escaped: it holds an escape */
static int scan_string(parser_t *s, int *escaped) {
    const unsigned char *start = (const unsigned char *)s->p;
    const unsigned char *p = start + 1, *end = (const unsigned char *)s->end;
    *escaped = 0;
    while (p < end) {
        unsigned c = *p;
        if (c == '"') {
            p++;
            s->p = (const char *)p;
            return emit(s, (const char *)start, (size_t)(p - start));
        }
        if (c == '\\') {
            *escaped = 1;
            if (p + 1 >= end) return BAD;
            c = p[1];
            if (c == 'u') {
                if (end - p < 6 || !is_hex(p[2]) || !is_hex(p[3]) || !is_hex(p[4]) || !is_hex(p[5])) return BAD;
                p += 6;
            } else if (c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' || c == 'r' ||
                       c == 't') {
                p += 2;
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

static int scan_object(parser_t *s, int depth) {
    const char *keys[MAX_KEYS];
    size_t key_len[MAX_KEYS];
    int n_keys = 0, escaped;
    if (depth > MAX_DEPTH) return BAD;
    s->p++;
    if (emit(s, "{", 1)) return BAD;
    skip_ws(s);
    if (s->p < s->end && *s->p == '}') {
        s->p++;
        return emit(s, "}", 1);
    }
    for (;;) {
        if (s->p >= s->end || *s->p != '"') return BAD;
        const char *key = s->p;
        if (scan_string(s, &escaped)) return BAD;
        size_t len = (size_t)(s->p - key);
        if (escaped) s->flags |= F_CANON;
        if (n_keys < MAX_KEYS) {
            for (int i = 0; i < n_keys; i++) {
                if (key_len[i] == len && memcmp(keys[i], key, len) == 0) s->flags |= F_CANON;
            }
            keys[n_keys] = key;
            key_len[n_keys++] = len;
        } else {
            s->flags |= F_CANON; /* too many keys to look for a repeated one */
        }
        skip_ws(s);
        if (s->p >= s->end || *s->p != ':') return BAD;
        s->p++;
        if (emit(s, ":", 1)) return BAD;
        skip_ws(s);
        if (scan_value(s, depth)) return BAD;
        int more = next_item(s, '}');
        if (more <= 0) return more;
    }
}

static int scan_array(parser_t *s, int depth) {
    if (depth > MAX_DEPTH) return BAD;
    s->p++;
    if (emit(s, "[", 1)) return BAD;
    skip_ws(s);
    if (s->p < s->end && *s->p == ']') {
        s->p++;
        return emit(s, "]", 1);
    }
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
        if (escaped) s->flags |= F_CANON;
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
    s->p++;
    skip_ws(s);
    if (s->p < s->end && *s->p == '}') {
        s->p++;
        *usual = 0;
        return 0;
    }
    for (;;) {
        if (s->p >= s->end || *s->p != '"') return BAD;
        const char *key = s->p;
        if (scan_string(s, &escaped)) return BAD;
        size_t len = (size_t)(s->p - key);
        skip_ws(s);
        if (s->p >= s->end || *s->p != ':') return BAD;
        s->p++;
        skip_ws(s);
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
    s->p++;
    skip_ws(s);
    if (s->p < s->end && *s->p == ']') {
        s->p++;
        return 0;
    }
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
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)flags;
    for (size_t i = 0; i < type_len; i++) h = (h ^ (unsigned char)type[i]) * 1099511628211ULL;
    h = (h ^ 0xFF) * 1099511628211ULL; /* never in UTF-8 text */
    for (size_t i = 0; i < value_len; i++) h = (h ^ (unsigned char)value[i]) * 1099511628211ULL;
    return h ^ (h >> 29);
}

static int rehash(olm_scan *sc, priv_t *pv, size_t cap) {
    int *table = calloc(cap, sizeof(int));
    if (!table) return 1;
    for (int d = 0; d < sc->n_dist; d++) {
        if (sc->d_flags[d] & F_FRESH) continue;
        size_t i = (size_t)pv->d_hash[d] & (cap - 1);
        while (table[i]) i = (i + 1) & (cap - 1);
        table[i] = d + 1;
    }
    free(pv->table);
    pv->table = table;
    pv->table_cap = cap;
    return 0;
}

/* the distinct property of prop (value text in the scratch buffer), added when new; -1 out of memory */
static int is_fresh(const priv_t *pv, const prop_t *prop) {
    for (size_t i = 0; i < pv->n_fresh; i++) {
        if (pv->fresh_len[i] == prop->type_len && memcmp(pv->fresh[i], prop->type, (size_t)prop->type_len) == 0)
            return 1;
    }
    return 0;
}

static int intern(olm_scan *sc, priv_t *pv, const prop_t *prop) {
    const char *value = pv->scratch.v + prop->value_off;
    int fresh = is_fresh(pv, prop);
    uint64_t h = hash_of(prop->flags, prop->type, (size_t)prop->type_len, value, (size_t)prop->value_len);
    if ((size_t)(sc->n_dist + 1) * 2 > pv->table_cap && rehash(sc, pv, pv->table_cap ? pv->table_cap * 2 : 4096))
        return -1;
    size_t mask = pv->table_cap - 1, i = (size_t)h & mask;
    for (; !fresh && pv->table[i]; i = (i + 1) & mask) {
        int d = pv->table[i] - 1;
        if (pv->d_hash[d] == h && sc->d_flags[d] == prop->flags && sc->d_type_len[d] == prop->type_len &&
            sc->d_value_len[d] == prop->value_len) {
            const char *at = pv->arena.v + sc->d_start[d];
            if (memcmp(at, prop->type, (size_t)prop->type_len) == 0 &&
                memcmp(at + prop->type_len, value, (size_t)prop->value_len) == 0)
                return d;
        }
    }
    int d = sc->n_dist;
    size_t cap = pv->d_cap;
    if ((size_t)d + 1 > cap) {
        size_t cap2 = cap ? cap * 2 : 4096;
        uint64_t *hh = realloc(pv->d_hash, cap2 * sizeof(uint64_t));
        if (hh) pv->d_hash = hh;
        size_t *st = realloc(sc->d_start, cap2 * sizeof(size_t));
        if (st) sc->d_start = st;
        int *tl = realloc(sc->d_type_len, cap2 * sizeof(int));
        if (tl) sc->d_type_len = tl;
        int *vl = realloc(sc->d_value_len, cap2 * sizeof(int));
        if (vl) sc->d_value_len = vl;
        unsigned char *fl = realloc(sc->d_flags, cap2);
        if (fl) sc->d_flags = fl;
        if (!hh || !st || !tl || !vl || !fl) return -1;
        pv->d_cap = cap2;
    }
    bytes_t *arena = fresh ? &pv->farena : &pv->arena;
    size_t start = arena->n;
    if (put_bytes(arena, prop->type, (size_t)prop->type_len) || put_bytes(arena, value, (size_t)prop->value_len))
        return -1;
    pv->d_hash[d] = h;
    sc->d_start[d] = start;
    sc->d_type_len[d] = prop->type_len;
    sc->d_value_len[d] = prop->value_len;
    sc->d_flags[d] = (unsigned char)(prop->flags | (fresh ? F_FRESH : 0));
    sc->n_dist = d + 1;
    if (!fresh) pv->table[i] = d + 1;
    return d;
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
    s.p++;
    skip_ws(&s);
    if (s.p < s.end && *s.p == '}') {
        s.p++;
        usual = 0;
    } else {
        for (;;) {
            if (s.p >= s.end || *s.p != '"') return LINE_BAD;
            const char *key = s.p;
            if (scan_string(&s, &escaped)) return LINE_BAD;
            int k = escaped ? K_OTHER : key_of(key, (size_t)(s.p - key));
            skip_ws(&s);
            if (s.p >= s.end || *s.p != ':') return LINE_BAD;
            s.p++;
            skip_ws(&s);
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
    /* a plain bundle: taken */
    int b = sc->n_bundles;
    if (put_int(&pv->line_kind, b) || put_int(&pv->b_line, line) ||
        put_bytes(&pv->names, field[K_NAME].at, field[K_NAME].len) || put_bytes(&pv->names, "\n", 1) ||
        put_bytes(&pv->packages, field[K_PACKAGE].at, field[K_PACKAGE].len) ||
        put_bytes(&pv->packages, "\n", 1) || put_bytes(&pv->images, field[K_IMAGE].at, field[K_IMAGE].len) ||
        put_bytes(&pv->images, "\n", 1))
        return LINE_OOM;
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
    bytes_t *bufs[] = {&pv->names, &pv->packages, &pv->images, &pv->arena, &pv->farena, &pv->scratch};
    ints_t *ints[] = {&pv->line_kind, &pv->line_start, &pv->line_end, &pv->b_line,
                      &pv->b_prop_start, &pv->b_ndist, &pv->occ};
    for (size_t i = 0; i < sizeof(bufs) / sizeof(*bufs); i++) free(bufs[i]->v);
    for (size_t i = 0; i < sizeof(ints) / sizeof(*ints); i++) free(ints[i]->v);
    free(pv->d_hash);
    free(pv->table);
    free(pv->props);
    for (size_t i = 0; i < pv->n_fresh; i++) free(pv->fresh[i]);
    free(pv->fresh);
    free(pv->fresh_len);
    free(pv);
    free(sc->d_start);
    free(sc->d_type_len);
    free(sc->d_value_len);
    free(sc->d_flags);
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
    sc->packages = pv->packages.v;
    sc->images = pv->images.v;
    sc->names_len = pv->names.n;
    sc->packages_len = pv->packages.n;
    sc->images_len = pv->images.n;
    sc->arena = pv->arena.v;
    sc->arena_len = pv->arena.n;
    sc->farena = pv->farena.v;
    sc->farena_len = pv->farena.n;
}

int olm_scan_fresh(olm_scan *sc, const char *type, int len) {
    priv_t *pv = sc->priv;
    char *copy = malloc(len > 0 ? (size_t)len : 1);
    if (!copy || grow((void **)&pv->fresh, &pv->fresh_cap, pv->n_fresh + 1, sizeof(char *)) ||
        grow((void **)&pv->fresh_len, &pv->fresh_len_cap, pv->n_fresh + 1, sizeof(int))) {
        free(copy);
        return 1;
    }
    memcpy(copy, type, (size_t)len);
    pv->fresh[pv->n_fresh] = copy;
    pv->fresh_len[pv->n_fresh++] = len;
    return 0;
}

int olm_scan_file(olm_scan *sc, const char *data, size_t n) {
    priv_t *pv = sc->priv;
    int first_dist = sc->n_dist;
    size_t arena_n = pv->arena.n;
    int rc = 0;
    sc->arena_first = arena_n;
    pv->farena.n = 0;
    pv->line_kind.n = pv->line_start.n = pv->line_end.n = pv->b_line.n = pv->occ.n = pv->b_ndist.n = 0;
    pv->b_prop_start.n = 0;
    pv->names.n = pv->packages.n = pv->images.n = 0;
    sc->n_bundles = 0;
    if (n > INT_MAX / 2) return 2;
    if (put_int(&pv->b_prop_start, 0)) return 1;
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
        if (kind == LINE_OTHER && put_int(&pv->line_kind, -1)) {
            rc = 1;
            break;
        }
        if (put_int(&pv->line_start, (int)start) || put_int(&pv->line_end, (int)stop)) {
            rc = 1;
            break;
        }
        if (!nl) break;
        start = stop + 1;
    }
    if (rc) {
        /* not taken: forget the distinct properties it added */
        sc->n_dist = first_dist;
        pv->arena.n = arena_n;
        if (pv->table_cap && rehash(sc, pv, pv->table_cap)) rc = 1;
        sc->n_bundles = 0;
    }
    publish(sc, pv);
    if (rc) sc->n_lines = 0;
    return rc;
}
