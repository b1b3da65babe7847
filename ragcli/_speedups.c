/* ragcli._speedups: the per-record work of indexing a JSONL corpus, in C where Python is slowest.

   Optional: setup.py builds it where a C compiler is found, and ragcli/ingest/passages.py falls back
   to the Python it mirrors where it is not (tests/test_speedups.py checks the two give the same).

   normalised(texts, composed) -> list: for each text, what passages.normalise_py gives:
     " ".join(t.split()) where t holds "  ", "\n", "\t" or "\r"; else t.strip();
     then composed(...) unless the text is known to be NFC already: a one-byte string (every
     character below U+0100 is NFC and composes with no other), or one whose characters are all in
     _nfc_safe.h's table (dashes, quotes, Greek, Cyrillic, CJK, Hangul syllables: most text).
   CPython 3.11's search for the two-character "  " scans ~2 ns a character (most of a corpus's
   whitespace test); the loop below scans a one-byte string at a fraction of that. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#include "_nfc_safe.h"

static PyObject *TEXT, *TITLE, *PID;  /* a record's keys, interned once */

/* Whether a string of one kind (one, two or four bytes a character) holds "  ", "\n", "\t" or "\r":
   64 characters at a time without a branch (the compiler vectorises the inner loop), stopping at the
   first block that holds one. */
#define NEEDS_COLLAPSE(NAME, CHAR)                                                                  \
    static int NAME(const CHAR *s, Py_ssize_t n)                                                    \
    {                                                                                               \
        Py_ssize_t i = 0;                                                                           \
        while (i + 65 <= n) {                                                                       \
            unsigned int hit = 0;                                                                   \
            for (Py_ssize_t j = i; j < i + 64; j++) {                                               \
                CHAR c = s[j], d = s[j + 1];                                                        \
                hit |= (unsigned int)((c == ' ') & (d == ' ')) | (c == '\n') | (c == '\t') | (c == '\r'); \
            }                                                                                       \
            if (hit)                                                                                \
                return 1;                                                                           \
            i += 64;                                                                                \
        }                                                                                           \
        for (; i < n; i++) {                                                                        \
            CHAR c = s[i];                                                                          \
            if (c == '\n' || c == '\t' || c == '\r' || (c == ' ' && i + 1 < n && s[i + 1] == ' ')) \
                return 1;                                                                           \
        }                                                                                           \
        return 0;                                                                                   \
    }

NEEDS_COLLAPSE(ucs1_needs_collapse, Py_UCS1)
NEEDS_COLLAPSE(ucs2_needs_collapse, Py_UCS2)
NEEDS_COLLAPSE(ucs4_needs_collapse, Py_UCS4)

static int
any_needs_collapse(PyObject *t)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(t);
    const void *data = PyUnicode_DATA(t);
    switch (PyUnicode_KIND(t)) {
    case PyUnicode_1BYTE_KIND:
        return ucs1_needs_collapse((const Py_UCS1 *)data, n);
    case PyUnicode_2BYTE_KIND:
        return ucs2_needs_collapse((const Py_UCS2 *)data, n);
    default:
        return ucs4_needs_collapse((const Py_UCS4 *)data, n);
    }
}

/* t collapsed or stripped (a new reference), as normalise_py does before composing. */
static PyObject *
collapsed(PyObject *t)
{
    if (any_needs_collapse(t)) {
        PyObject *words = PyUnicode_Split(t, NULL, -1);
        if (words == NULL)
            return NULL;
        PyObject *space = PyUnicode_FromOrdinal(' ');
        PyObject *joined = space ? PyUnicode_Join(space, words) : NULL;
        Py_XDECREF(space);
        Py_DECREF(words);
        return joined;
    }
    Py_ssize_t n = PyUnicode_GET_LENGTH(t);
    if (n && (Py_UNICODE_ISSPACE(PyUnicode_READ_CHAR(t, 0)) || Py_UNICODE_ISSPACE(PyUnicode_READ_CHAR(t, n - 1))))
        return PyObject_CallMethod(t, "strip", NULL);
    return PyUnicode_FromObject(t);  /* t itself, or a str of a subclass's text (as strip() gives) */
}

/* Whether every character of t is one that a string known to be NFC can hold without a check
   (_nfc_safe.h, written by scripts/gen_nfc_table.py): then t is NFC. A one-byte string always is:
   every character below U+0100 is NFC and composes with no other. */
static int
nfc_as_is(PyObject *t)
{
    int kind = PyUnicode_KIND(t);
    if (kind == PyUnicode_1BYTE_KIND)
        return 1;
    if (kind != PyUnicode_2BYTE_KIND)
        return 0;  /* (beyond the Basic Multilingual Plane: asked of unicodedata) */
    const Py_UCS2 *s = PyUnicode_2BYTE_DATA(t);
    for (Py_ssize_t i = 0, n = PyUnicode_GET_LENGTH(t); i < n; i++) {
        Py_UCS2 c = s[i];
        if (c < 0x300)
            continue;
        unsigned char page = NFC_PAGE[c >> 8];
        if (page == 0 || (page > 1 && !(NFC_BITS[page - 2][(c & 0xFF) >> 3] & (1 << (c & 7)))))
            return 0;
    }
    return 1;
}

/* ``composed(t)`` unless t is known to be NFC (``nfc_as_is``). A new reference. */
static PyObject *
composed_unless_nfc(PyObject *t, PyObject *composed)
{
    if (nfc_as_is(t)) {
        Py_INCREF(t);
        return t;
    }
    return PyObject_CallOneArg(composed, t);
}

/* nfc_as_is(text): whether the C takes text for NFC without asking ``composed`` (for the tests). */
static PyObject *
nfc_as_is_py(PyObject *self, PyObject *t)
{
    if (!PyUnicode_Check(t)) {
        PyErr_SetString(PyExc_TypeError, "nfc_as_is: a str");
        return NULL;
    }
    return PyBool_FromLong(nfc_as_is(t));
}

/* One text as passages.normalise_py gives it (a new reference). */
static PyObject *
normalised_one(PyObject *t, PyObject *composed)
{
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(t) < 0)  /* (a no-op, deprecated, from Python 3.12) */
        return NULL;
#endif
    PyObject *b = collapsed(t);
    if (b == NULL)
        return NULL;
    PyObject *c = composed_unless_nfc(b, composed);
    Py_DECREF(b);
    return c;
}

static PyObject *
normalised(PyObject *self, PyObject *args)
{
    PyObject *texts, *composed;
    if (!PyArg_ParseTuple(args, "O!O:normalised", &PyList_Type, &texts, &composed))
        return NULL;
    texts = PyList_AsTuple(texts);  /* held while ``composed`` runs: whatever it does, no item goes */
    if (texts == NULL)
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(texts);
    PyObject *out = PyList_New(n);
    for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
        PyObject *t = PyTuple_GET_ITEM(texts, i);
        PyObject *b = NULL;
        if (!PyUnicode_Check(t))
            PyErr_Format(PyExc_TypeError, "normalised: item %zd is %.100s, not str", i, Py_TYPE(t)->tp_name);
        else
            b = normalised_one(t, composed);
        if (b == NULL)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, i, b);
    }
    Py_DECREF(texts);
    return out;
}

/* Whether a two- or four-byte string holds a character in [lo, hi], 64 at a time without a branch. */
#define HOLDS_RANGE(NAME, CHAR)                                                                     \
    static int NAME(const CHAR *s, Py_ssize_t n, Py_UCS4 lo, Py_UCS4 hi)                           \
    {                                                                                               \
        Py_ssize_t i = 0;                                                                           \
        for (; i + 64 <= n; i += 64) {                                                              \
            unsigned int hit = 0;                                                                   \
            for (Py_ssize_t j = i; j < i + 64; j++)                                                 \
                hit |= (unsigned int)((s[j] >= lo) & (s[j] <= hi));                                 \
            if (hit)                                                                                \
                return 1;                                                                           \
        }                                                                                           \
        for (; i < n; i++)                                                                          \
            if (s[i] >= lo && s[i] <= hi)                                                           \
                return 1;                                                                           \
        return 0;                                                                                   \
    }

HOLDS_RANGE(ucs2_holds, Py_UCS2)
HOLDS_RANGE(ucs4_holds, Py_UCS4)

/* in_range(lo, hi, text): whether text holds a character from lo to hi (code points); a one-byte string
   is known not to without a scan where lo is above U+00FF. What schema.maybe_cjk asks of every passage
   that is not ASCII (a regular expression scanned the Latin-1 ones too, at ~1.2 ns a character). */
static PyObject *
in_range(PyObject *self, PyObject *args)
{
    PyObject *t;
    unsigned int lo, hi;
    if (!PyArg_ParseTuple(args, "IIU:in_range", &lo, &hi, &t))
        return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(t);
    const void *data = PyUnicode_DATA(t);
    int found;
    switch (PyUnicode_KIND(t)) {
    case PyUnicode_1BYTE_KIND:
        found = 0;
        for (Py_ssize_t i = 0; lo <= 0xFF && i < n && !found; i++)
            found = ((const Py_UCS1 *)data)[i] >= lo && ((const Py_UCS1 *)data)[i] <= hi;
        break;
    case PyUnicode_2BYTE_KIND:
        found = lo <= 0xFFFF && ucs2_holds((const Py_UCS2 *)data, n, lo, hi);
        break;
    default:
        found = ucs4_holds((const Py_UCS4 *)data, n, lo, hi);
    }
    return PyBool_FromLong(found);
}

/* ---------------------------------------------------------------- tantivy documents as JSON */

static const char *DOC_FIELDS[5] = {"pid", "title", "text", "path", "location"};  /* a Passage's, in order */

/* How many characters the JSON string of t takes without its quotes (-1: t holds a lone surrogate, no
   JSON tantivy reads; 0 or more otherwise), and, in *hit, whether it holds a character in [lo, hi]:
   one typed loop a kind, without a branch for the common character. */
#define JSON_LENGTH(NAME, CHAR, WIDE)                                                               \
    static Py_ssize_t NAME(const CHAR *s, Py_ssize_t n, Py_UCS4 lo, Py_UCS4 hi, int *hit, int *controls) \
    {                                                                                               \
        Py_ssize_t extra = 0;                                                                       \
        int odd = 0;                                                                                \
        for (Py_ssize_t i = 0; i < n; i++) {                                                        \
            CHAR c = s[i];                                                                          \
            odd |= (c < 0x20) | (c == '"') | (c == '\\') | (WIDE && ((c >= lo) & (c <= hi)))         \
                   | (WIDE && (((Py_UCS4)c >= 0xD800) & ((Py_UCS4)c <= 0xDFFF)));                                   \
        }                                                                                           \
        if (!odd)                                                                                   \
            return n;                                                                               \
        for (Py_ssize_t i = 0; i < n; i++) {                                                        \
            CHAR c = s[i];                                                                          \
            if (c < 0x20) {                                                                         \
                extra += (c == '\n' || c == '\t' || c == '\r' || c == '\b' || c == '\f') ? 1 : 5;    \
                *controls = 1;                                                                      \
            }                                                                                       \
            else if (c == '"' || c == '\\')                                                          \
                extra += 1;                                                                         \
            else if (WIDE && (Py_UCS4)c >= 0xD800 && (Py_UCS4)c <= 0xDFFF)                                      \
                return -1;                                                                          \
            else if (WIDE && c >= lo && c <= hi)                                                    \
                *hit = 1;                                                                           \
        }                                                                                           \
        return n + extra;                                                                           \
    }

JSON_LENGTH(json_length1, Py_UCS1, 0)
JSON_LENGTH(json_length2, Py_UCS2, 1)
JSON_LENGTH(json_length4, Py_UCS4, 1)

static Py_ssize_t
json_length(PyObject *t, Py_UCS4 lo, Py_UCS4 hi, int *hit, int *controls)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(t);
    switch (PyUnicode_KIND(t)) {
    case PyUnicode_1BYTE_KIND:  /* (Latin-1: no CJK and no surrogate in it; lo is above U+00FF) */
        return json_length1(PyUnicode_1BYTE_DATA(t), n, lo, hi, hit, controls);
    case PyUnicode_2BYTE_KIND:
        return json_length2(PyUnicode_2BYTE_DATA(t), n, lo, hi, hit, controls);
    default:
        return json_length4(PyUnicode_4BYTE_DATA(t), n, lo, hi, hit, controls);
    }
}

/* Where the next character of s[from:n] that JSON escapes is (n if none), a typed loop a kind. */
#define NEXT_ESCAPE(NAME, CHAR)                                                                     \
    static Py_ssize_t NAME(const CHAR *s, Py_ssize_t from, Py_ssize_t n)                            \
    {                                                                                               \
        for (Py_ssize_t i = from; i < n; i++)                                                       \
            if (s[i] < 0x20 || s[i] == '"' || s[i] == '\\')                                          \
                return i;                                                                           \
        return n;                                                                                   \
    }

NEXT_ESCAPE(next_escape1, Py_UCS1)
NEXT_ESCAPE(next_escape2, Py_UCS2)
NEXT_ESCAPE(next_escape4, Py_UCS4)

/* next_escape1 where s holds no control character: memchr for the quote and the backslash, each looked
   for again only once passed (``seen``: where each is, n if none is left; -1 not yet looked for). */
static Py_ssize_t
next_quote_or_backslash(const Py_UCS1 *s, Py_ssize_t from, Py_ssize_t n, Py_ssize_t seen[2])
{
    static const int marks[2] = {'"', '\\'};
    for (int k = 0; k < 2; k++) {
        if (seen[k] != n && seen[k] < from) {
            const Py_UCS1 *at = memchr(s + from, marks[k], (size_t)(n - from));
            seen[k] = at ? at - s : n;
        }
    }
    return seen[0] < seen[1] ? seen[0] : seen[1];
}

static Py_ssize_t
next_escape(int kind, const void *data, Py_ssize_t from, Py_ssize_t n)
{
    switch (kind) {
    case PyUnicode_1BYTE_KIND:
        return next_escape1((const Py_UCS1 *)data, from, n);
    case PyUnicode_2BYTE_KIND:
        return next_escape2((const Py_UCS2 *)data, from, n);
    default:
        return next_escape4((const Py_UCS4 *)data, from, n);
    }
}

/* Write t as a JSON string (quotes included) into out at *at: the runs between characters to escape
   copied whole (PyUnicode_CopyCharacters, a memcpy where the kinds agree). */
static void
json_write(PyObject *out, Py_ssize_t *at, PyObject *t, int clean, int controls)
{
    static const char hex[] = "0123456789abcdef";
    int okind = PyUnicode_KIND(out), kind = PyUnicode_KIND(t);
    void *odata = PyUnicode_DATA(out);
    const void *data = PyUnicode_DATA(t);
    Py_ssize_t w = *at, n = PyUnicode_GET_LENGTH(t), run = 0;
    PyUnicode_WRITE(okind, odata, w++, '"');
    if (clean) {  /* nothing to escape (json_length said): one copy */
        PyUnicode_CopyCharacters(out, w, t, 0, n);
        w += n;
        run = n;
    }
    Py_ssize_t seen[2] = {-1, -1};
    int marks_only = kind == PyUnicode_1BYTE_KIND && !controls;
    while (run < n) {
        Py_ssize_t i = marks_only ? next_quote_or_backslash((const Py_UCS1 *)data, run, n, seen)
                                  : next_escape(kind, data, run, n);
        if (i > run) {  /* (cannot fail: out is new, and its maximum character is t's or more) */
            PyUnicode_CopyCharacters(out, w, t, run, i - run);
            w += i - run;
        }
        run = i + 1;
        if (i == n)
            break;
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        PyUnicode_WRITE(okind, odata, w++, '\\');
        switch (c) {
        case '"': case '\\': PyUnicode_WRITE(okind, odata, w++, c); break;
        case '\n': PyUnicode_WRITE(okind, odata, w++, 'n'); break;
        case '\t': PyUnicode_WRITE(okind, odata, w++, 't'); break;
        case '\r': PyUnicode_WRITE(okind, odata, w++, 'r'); break;
        case '\b': PyUnicode_WRITE(okind, odata, w++, 'b'); break;
        case '\f': PyUnicode_WRITE(okind, odata, w++, 'f'); break;
        default:
            PyUnicode_WRITE(okind, odata, w++, 'u');
            PyUnicode_WRITE(okind, odata, w++, '0');
            PyUnicode_WRITE(okind, odata, w++, '0');
            PyUnicode_WRITE(okind, odata, w++, hex[c >> 4]);
            PyUnicode_WRITE(okind, odata, w++, hex[c & 15]);
        }
    }
    PyUnicode_WRITE(okind, odata, w++, '"');
    *at = w;
}

/* One passage as a tantivy JSON document (a new reference), or None (a new reference to it) where the
   writer must make it itself: a title or text holds a character in [lo, hi] (it may need CJK terms), a
   field holds a lone surrogate or is not exactly a str; NULL on an error. */
static PyObject *
passage_json(PyObject *p, Py_UCS4 lo, Py_UCS4 hi)
{
    if (!PyTuple_Check(p) || PyTuple_GET_SIZE(p) != 5)
        Py_RETURN_NONE;  /* (what the writer makes of it, it says) */
    Py_ssize_t size = 1;  /* "{" ... "}": each field '"name":' and its string, commas between */
    Py_UCS4 maxchar = 127;
    int hit = 0, clean[5], controls[5] = {0, 0, 0, 0, 0};
    for (int k = 0; k < 5; k++) {
        PyObject *t = PyTuple_GET_ITEM(p, k);
        if (!PyUnicode_CheckExact(t))  /* a str subclass (a PDF library's title): the writer's own way */
            Py_RETURN_NONE;
        Py_ssize_t n = json_length(t, lo, hi, &hit, &controls[k]);
        clean[k] = n == PyUnicode_GET_LENGTH(t);
        if (n < 0 || (hit && (k == 1 || k == 2)))  /* (the writer looks for CJK in the title and text) */
            Py_RETURN_NONE;
        hit = 0;
        size += (Py_ssize_t)strlen(DOC_FIELDS[k]) + 3 + n + 2 + 1;
        if (PyUnicode_MAX_CHAR_VALUE(t) > maxchar)
            maxchar = PyUnicode_MAX_CHAR_VALUE(t);
    }
    PyObject *out = PyUnicode_New(size, maxchar);
    if (out == NULL)
        return NULL;
    int okind = PyUnicode_KIND(out);
    void *odata = PyUnicode_DATA(out);
    Py_ssize_t w = 0;
    PyUnicode_WRITE(okind, odata, w++, '{');
    for (int k = 0; k < 5; k++) {
        if (k)
            PyUnicode_WRITE(okind, odata, w++, ',');
        PyUnicode_WRITE(okind, odata, w++, '"');
        for (const char *c = DOC_FIELDS[k]; *c; c++)
            PyUnicode_WRITE(okind, odata, w++, (Py_UCS4)*c);
        PyUnicode_WRITE(okind, odata, w++, '"');
        PyUnicode_WRITE(okind, odata, w++, ':');
        json_write(out, &w, PyTuple_GET_ITEM(p, k), clean[k], controls[k]);
    }
    PyUnicode_WRITE(okind, odata, w++, '}');
    assert(w == size);
    return out;
}

/* documents(passages, lo, hi) -> list: each passage (pid, title, text, path, location) as the JSON
   object tantivy's ``IndexWriter.add_json`` parses, or None where the writer makes that one itself
   (``passage_json``). tantivy reads a JSON string with less work than a ``Document`` built from
   keyword arguments (each value copied into a map and then into tantivy's document): the main
   thread's time handing corpus_dev's passages over was 40 ms that way, 24 with the JSON. */
static PyObject *
documents(PyObject *self, PyObject *args)
{
    PyObject *passages;
    unsigned int lo, hi;
    if (!PyArg_ParseTuple(args, "O!II:documents", &PyList_Type, &passages, &lo, &hi))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(passages);
    PyObject *out = PyList_New(n);
    for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
        PyObject *doc = passage_json(PyList_GET_ITEM(passages, i), lo, hi);
        if (doc == NULL)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, i, doc);
    }
    return out;
}

/* json_array(parts, block, end) -> (bytes, lines): the complete lines of a JSONL read, parts (the start
   of its first line, from reads before) and block[:end] (end: where its last "\n" is), as one JSON
   array, "[" + the lines joined by "," + "]", and how many lines there are: one pass over the bytes,
   where Python cut them into a bytes object a line and joined those again (~5 ms of corpus_dev's
   indexing). A line's "\r" before its "\n" stays: JSON's whitespace. */
static PyObject *
json_array(PyObject *self, PyObject *args)
{
    PyObject *parts;
    Py_buffer block;
    Py_ssize_t end;
    if (!PyArg_ParseTuple(args, "O!y*n:json_array", &PyList_Type, &parts, &block, &end))
        return NULL;
    PyObject *out = NULL;
    if (end < 0 || end > block.len) {
        PyErr_SetString(PyExc_ValueError, "json_array: end outside the block");
        goto done;
    }
    Py_ssize_t size = end + 2, nparts = PyList_GET_SIZE(parts);
    for (Py_ssize_t i = 0; i < nparts; i++) {
        PyObject *part = PyList_GET_ITEM(parts, i);
        if (!PyBytes_Check(part)) {
            PyErr_SetString(PyExc_TypeError, "json_array: parts must be bytes");
            goto done;
        }
        size += PyBytes_GET_SIZE(part);
    }
    PyObject *joined = PyBytes_FromStringAndSize(NULL, size);
    if (joined == NULL)
        goto done;
    char *w = PyBytes_AS_STRING(joined);
    Py_ssize_t lines = 1;
    *w++ = '[';
    for (Py_ssize_t i = 0; i <= nparts; i++) {
        const char *r = i < nparts ? PyBytes_AS_STRING(PyList_GET_ITEM(parts, i)) : (const char *)block.buf;
        Py_ssize_t n = i < nparts ? PyBytes_GET_SIZE(PyList_GET_ITEM(parts, i)) : end;
        const char *stop = r + n;
        while (r < stop) {  /* memchr to each line end, memcpy up to it */
            const char *nl = memchr(r, '\n', (size_t)(stop - r));
            Py_ssize_t k = (nl ? nl : stop) - r;
            memcpy(w, r, (size_t)k);
            w += k;
            r += k;
            if (nl) {
                *w++ = ',';
                r++;
                lines++;
            }
        }
    }
    *w = ']';
    out = Py_BuildValue("(Nn)", joined, lines);
done:
    PyBuffer_Release(&block);
    return out;
}

/* plain_batch(numbers, records, prefix, key, passage, long_chars, composed, record_title, record_pid, parts):
   records._plain_batch_py, the passages of a batch of plain JSONL records, a record at a time in C where
   Python takes a pass over the batch per column: None unless every record is a dict whose "text" is a
   str that is not blank once normalised. Each record's passage is passage(pid, title, body, key,
   prefix + str(number)): its title composed (record_title(record) unless a str), its pid as given
   (record_pid(record, title, body) unless a str that is not empty); a body of long_chars or more is
   handed to parts(pid, title, body, key, location), which gives the record's passages. */
static PyObject *
plain_batch(PyObject *self, PyObject *args)
{
    PyObject *numbers, *records, *prefix, *key, *passage, *composed, *record_title, *record_pid, *parts;
    Py_ssize_t long_chars;
    if (!PyArg_ParseTuple(args, "OO!UOO!nOOOO:plain_batch", &numbers, &PyList_Type, &records, &prefix, &key,
                          &PyType_Type, &passage, &long_chars, &composed, &record_title, &record_pid, &parts))
        return NULL;
    if (!PyType_IsSubtype((PyTypeObject *)passage, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "plain_batch: passage must be a tuple type");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(records);
    if (n == 0)
        Py_RETURN_NONE;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *r = PyList_GET_ITEM(records, i);
        if (!PyDict_CheckExact(r))
            Py_RETURN_NONE;
        PyObject *text = PyDict_GetItemWithError(r, TEXT);
        if (text == NULL && PyErr_Occurred())
            return NULL;
        if (text == NULL || !PyUnicode_CheckExact(text))
            Py_RETURN_NONE;
    }
    /* the records held while the callbacks run (record_title, record_pid, parts, composed: Python) */
    PyObject *recs = PyList_AsTuple(records), *bodies = PyList_New(n), *out = NULL, *seq = NULL;
    if (recs == NULL || bodies == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *text = PyDict_GetItemWithError(PyTuple_GET_ITEM(recs, i), TEXT);
        if (text == NULL || !PyUnicode_CheckExact(text)) {  /* (a callback changed the record since) */
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_RuntimeError, "plain_batch: a record changed while it was read");
            goto fail;
        }
        PyObject *body = normalised_one(text, composed);
        if (body == NULL)
            goto fail;
        PyList_SET_ITEM(bodies, i, body);
        if (PyUnicode_GET_LENGTH(body) == 0) {  /* a blank record: the batch is read a record at a time */
            Py_DECREF(recs);
            Py_DECREF(bodies);
            Py_RETURN_NONE;
        }
    }
    seq = PySequence_Fast(numbers, "plain_batch: numbers must be a sequence");
    if (seq == NULL)
        goto fail;
    if (PySequence_Fast_GET_SIZE(seq) != n) {
        PyErr_SetString(PyExc_ValueError, "plain_batch: as many numbers as records");
        goto fail;
    }
    out = PyList_New(0);
    if (out == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *r = PyTuple_GET_ITEM(recs, i), *body = PyList_GET_ITEM(bodies, i);
        PyObject *title = PyDict_GetItemWithError(r, TITLE);
        if (title == NULL && PyErr_Occurred())
            goto fail;
        title = title != NULL && PyUnicode_CheckExact(title) ? composed_unless_nfc(title, composed)
                                                             : PyObject_CallOneArg(record_title, r);
        if (title == NULL)
            goto fail;
        PyObject *pid = PyDict_GetItemWithError(r, PID);
        if (pid == NULL && PyErr_Occurred()) {
            Py_DECREF(title);
            goto fail;
        }
        if (pid != NULL && PyUnicode_CheckExact(pid) && PyUnicode_GET_LENGTH(pid) > 0)
            Py_INCREF(pid);
        else
            pid = PyObject_CallFunctionObjArgs(record_pid, r, title, body, NULL);
        PyObject *number = pid ? PyObject_Str(PySequence_Fast_GET_ITEM(seq, i)) : NULL;
        PyObject *location = number ? PyUnicode_Concat(prefix, number) : NULL;
        Py_XDECREF(number);
        int ok = location != NULL;
        if (ok && PyUnicode_GET_LENGTH(body) >= long_chars) {
            PyObject *some = PyObject_CallFunctionObjArgs(parts, pid, title, body, key, location, NULL);
            ok = some != NULL && PyList_SetSlice(out, PY_SSIZE_T_MAX, PY_SSIZE_T_MAX, some) == 0;
            Py_XDECREF(some);
        } else if (ok) {
            /* tuple.__new__(passage, items): what the namedtuple's own __new__ does, without its Python frame */
            PyObject *items = PyTuple_Pack(5, pid, title, body, key, location);
            PyObject *with = items ? PyTuple_Pack(1, items) : NULL;
            PyObject *p = with ? PyTuple_Type.tp_new((PyTypeObject *)passage, with, NULL) : NULL;
            Py_XDECREF(with);
            Py_XDECREF(items);
            ok = p != NULL && PyList_Append(out, p) == 0;
            Py_XDECREF(p);
        }
        Py_XDECREF(location);
        Py_XDECREF(pid);
        Py_DECREF(title);
        if (!ok)
            goto fail;
    }
    Py_DECREF(seq);
    Py_DECREF(bodies);
    Py_DECREF(recs);
    return out;
fail:
    Py_XDECREF(out);
    Py_XDECREF(seq);
    Py_XDECREF(bodies);
    Py_XDECREF(recs);
    return NULL;
}

static PyMethodDef methods[] = {
    {"documents", documents, METH_VARARGS,
     "documents(passages, lo, hi): each passage as a tantivy JSON document, or None where one of its title "
     "and text holds a character from lo to hi, or a field a lone surrogate."},
    {"json_array", json_array, METH_VARARGS,
     "json_array(parts, block, end): (b'[' + the lines of b''.join(parts) + block[:end] joined by ',' + b']', lines)."},
    {"nfc_as_is", nfc_as_is_py, METH_O, "nfc_as_is(text): whether text is known to be NFC without unicodedata."},
    {"in_range", in_range, METH_VARARGS, "in_range(lo, hi, text): whether text holds a character from lo to hi (code points)."},
    {"plain_batch", plain_batch, METH_VARARGS,
     "plain_batch(numbers, records, prefix, key, passage, long_chars, composed, record_title, record_pid, parts): "
     "the passages of a batch of plain JSONL records, or None (see records._plain_batch_py)."},
    {"normalised", normalised, METH_VARARGS,
     "normalised(texts, composed): each text's whitespace collapsed and its accents composed (see passages.normalised)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "ragcli._speedups", "The per-record work of indexing, in C (optional).", -1, methods,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    TEXT = PyUnicode_InternFromString("text");
    TITLE = PyUnicode_InternFromString("title");
    PID = PyUnicode_InternFromString("pid");
    if (TEXT == NULL || TITLE == NULL || PID == NULL)
        return NULL;
    return PyModule_Create(&module);
}
