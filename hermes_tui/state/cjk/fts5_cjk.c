/*
** fts5_cjk.c -- the "cjk_unicode61" FTS5 tokenizer as a loadable SQLite extension.
**
** Why it exists: unicode61 keeps a whole CJK run ("日本語のテキスト") as ONE token, so no
** query shorter than the run can match inside it, and trigram needs >= 3 characters per
** term. This tokenizer runs unicode61 first and re-examines every token it emits:
**
**   - a token without a CJK code point is forwarded unchanged (text, offsets, flags);
**   - otherwise the token is cut into maximal non-CJK segments (one token each) and
**     maximal CJK runs; a run of n >= 2 characters becomes its n-1 overlapping bigrams,
**     a run of 1 character a unigram.  Order is preserved.
**
** Offsets are byte offsets into the ORIGINAL text: unicode61's token start plus the byte
** position inside the (folded) unicode61 token, clamped to unicode61's token end.  CJK is
** never changed by unicode61's folding, so CJK offsets are exact.
**
** Flags: the tokenize flags (QUERY / DOCUMENT / PREFIX / AUX) go to unicode61 as they
** are.  A token's tflags (FTS5_TOKEN_COLOCATED) stay on the FIRST piece it is cut into;
** later pieces are new positions, so they carry the flag bit cleared.
**
** The pure-Python twin (python_tokenizer.py) must stay token-for-token identical: an
** external-content index written by one and maintained by the other is only consistent
** if both produce exactly the same tokens.
**
** API: FTS5 v1 tokenizer interface (fts5_api.xFindTokenizer / xCreateTokenizer), which
** every SQLite with FTS5 provides.  Entry points: sqlite3_ftscjk_init (the name SQLite
** derives from the file name) and the alias sqlite3_fts5_cjk_init.
*/
#include "sqlite3ext.h"

#include <string.h>

/* A static api pointer, not SQLITE_EXTENSION_INIT1's global: SQLite dlopen()s extensions
** with RTLD_GLOBAL, and a global `sqlite3_api` could bind to another extension's copy. */
static const sqlite3_api_routines *sqlite3_api = 0;

/* ---------------------------------------------------------------- classification */

static int cjkIsCjk(unsigned int c) {
  if (c < 0x1100) return 0; /* fast exit for ASCII, Latin, Greek, Cyrillic, ... */
  if (c <= 0x11FF) return 1;                   /* Hangul Jamo                   */
  if (c < 0x3040) return 0;
  if (c <= 0x30FF) return 1;                   /* Hiragana, Katakana            */
  if (c >= 0x3130 && c <= 0x318F) return 1;    /* Hangul compatibility Jamo     */
  if (c >= 0x31F0 && c <= 0x31FF) return 1;    /* Katakana phonetic extensions  */
  if (c >= 0x3400 && c <= 0x4DBF) return 1;    /* CJK extension A               */
  if (c >= 0x4E00 && c <= 0x9FFF) return 1;    /* CJK unified ideographs        */
  if (c >= 0xA960 && c <= 0xA97F) return 1;    /* Hangul Jamo extended-A        */
  if (c >= 0xAC00 && c <= 0xD7A3) return 1;    /* Hangul syllables              */
  if (c >= 0xD7B0 && c <= 0xD7FF) return 1;    /* Hangul Jamo extended-B        */
  if (c >= 0xF900 && c <= 0xFAFF) return 1;    /* CJK compatibility ideographs  */
  if (c >= 0x20000 && c <= 0x2FA1F) return 1;  /* CJK extensions B..F, compat sup */
  return 0;
}

/* Decode one code point at z[0..n) (n >= 1) and return its byte length (>= 1).  unicode61
** only emits well-formed UTF-8; a malformed or truncated sequence still advances by one
** byte as a non-CJK unit, so segmentation always terminates. */
static int cjkDecode(const unsigned char *z, int n, unsigned int *pc) {
  unsigned int c = z[0];
  if (c < 0x80) { *pc = c; return 1; }
  if (c >= 0xC2 && c < 0xE0 && n >= 2 && (z[1] & 0xC0) == 0x80) {
    *pc = ((c & 0x1F) << 6) | (z[1] & 0x3F);
    return 2;
  }
  if (c >= 0xE0 && c < 0xF0 && n >= 3 && (z[1] & 0xC0) == 0x80 && (z[2] & 0xC0) == 0x80) {
    *pc = ((c & 0x0F) << 12) | ((unsigned int)(z[1] & 0x3F) << 6) | (z[2] & 0x3F);
    return 3;
  }
  if (c >= 0xF0 && c < 0xF5 && n >= 4 && (z[1] & 0xC0) == 0x80 && (z[2] & 0xC0) == 0x80
      && (z[3] & 0xC0) == 0x80) {
    *pc = ((c & 0x07) << 18) | ((unsigned int)(z[1] & 0x3F) << 12)
        | ((unsigned int)(z[2] & 0x3F) << 6) | (z[3] & 0x3F);
    return 4;
  }
  *pc = 0xFFFD; /* not CJK */
  return 1;
}

/* ---------------------------------------------------------------- tokenizer objects */

typedef int (*CjkXToken)(void *, int, const char *, int, int, int);

typedef struct CjkTokenizer {
  fts5_tokenizer inner; /* unicode61's methods            */
  Fts5Tokenizer *pInner; /* unicode61 instance (with args) */
} CjkTokenizer;

/* Per-xTokenize state handed to unicode61 as its callback context. */
typedef struct CjkCtx {
  void *pOuter;
  CjkXToken xOuter;
} CjkCtx;

/* Per-unicode61-token emitter: remembers whether the first piece has gone out, so only
** that piece keeps FTS5_TOKEN_COLOCATED, and clamps every offset to the token end. */
typedef struct CjkPiece {
  CjkCtx *ctx;
  const char *zTok;
  int iStart, iEnd;
  int tflags;
} CjkPiece;

static int cjkClamp(const CjkPiece *p, int off) {
  int v = p->iStart + off;
  return v > p->iEnd ? p->iEnd : v;
}

static int cjkEmit(CjkPiece *p, int from, int to) {
  int tflags = p->tflags;
  p->tflags &= ~FTS5_TOKEN_COLOCATED;
  return p->ctx->xOuter(p->ctx->pOuter, tflags, p->zTok + from, to - from,
                        cjkClamp(p, from), cjkClamp(p, to));
}

/* Re-emit one unicode61 token (see the header comment for the rules). */
static int cjkSplit(CjkCtx *ctx, int tflags, const char *zTok, int nTok, int iStart, int iEnd) {
  const unsigned char *z = (const unsigned char *)zTok;
  CjkPiece piece;
  unsigned int c;
  int i = 0, rc = SQLITE_OK;

  /* Fast path: forward a token without CJK untouched.  Every CJK code point is >= U+1100,
  ** i.e. a lead byte >= 0xE1, so a token of smaller bytes needs no decoding at all. */
  while (i < nTok) {
    if (z[i] < 0xE1) { i++; continue; }
    {
      int n = cjkDecode(z + i, nTok - i, &c);
      if (cjkIsCjk(c)) break;
      i += n;
    }
  }
  if (i >= nTok) return ctx->xOuter(ctx->pOuter, tflags, zTok, nTok, iStart, iEnd);

  piece.ctx = ctx;
  piece.zTok = zTok;
  piece.iStart = iStart;
  piece.iEnd = iEnd;
  piece.tflags = tflags;

  /* [0, i) is a non-CJK prefix (possibly empty); a CJK code point starts at i. */
  if (i > 0) rc = cjkEmit(&piece, 0, i);
  while (rc == SQLITE_OK && i < nTok) {
    int n = cjkDecode(z + i, nTok - i, &c);
    if (!cjkIsCjk(c)) {
      /* maximal non-CJK segment */
      int from = i;
      i += n;
      while (i < nTok) {
        n = cjkDecode(z + i, nTok - i, &c);
        if (cjkIsCjk(c)) break;
        i += n;
      }
      rc = cjkEmit(&piece, from, i);
    } else {
      /* maximal CJK run: a..b is the previous character, b..i the current one */
      int a = i, b = i + n, nChar = 1;
      i = b;
      while (rc == SQLITE_OK && i < nTok) {
        n = cjkDecode(z + i, nTok - i, &c);
        if (!cjkIsCjk(c)) break;
        rc = cjkEmit(&piece, a, i + n); /* bigram: previous + current character */
        nChar++;
        a = i;
        i += n;
      }
      if (rc == SQLITE_OK && nChar == 1) rc = cjkEmit(&piece, a, b); /* lone char */
    }
  }
  return rc;
}

static int cjkInnerToken(void *pCtx, int tflags, const char *zTok, int nTok, int iStart, int iEnd) {
  return cjkSplit((CjkCtx *)pCtx, tflags, zTok, nTok, iStart, iEnd);
}

/* xCreate: instantiate unicode61 with ALL our arguments, so 'cjk_unicode61 remove_diacritics
** 2' behaves like unicode61 with that option (and rejects what unicode61 rejects). */
static int cjkCreate(void *pCtx, const char **azArg, int nArg, Fts5Tokenizer **ppOut) {
  fts5_api *pApi = (fts5_api *)pCtx;
  void *pInnerCtx = 0;
  CjkTokenizer *p;
  int rc;

  *ppOut = 0;
  p = (CjkTokenizer *)sqlite3_malloc(sizeof(*p));
  if (p == 0) return SQLITE_NOMEM;
  memset(p, 0, sizeof(*p));
  rc = pApi->xFindTokenizer(pApi, "unicode61", &pInnerCtx, &p->inner);
  if (rc == SQLITE_OK) rc = p->inner.xCreate(pInnerCtx, azArg, nArg, &p->pInner);
  if (rc != SQLITE_OK) {
    sqlite3_free(p);
    return rc;
  }
  *ppOut = (Fts5Tokenizer *)p;
  return SQLITE_OK;
}

static void cjkDelete(Fts5Tokenizer *pTok) {
  CjkTokenizer *p = (CjkTokenizer *)pTok;
  if (p == 0) return;
  if (p->pInner) p->inner.xDelete(p->pInner);
  sqlite3_free(p);
}

static int cjkTokenize(Fts5Tokenizer *pTok, void *pCtx, int flags, const char *pText, int nText,
                       CjkXToken xToken) {
  CjkTokenizer *p = (CjkTokenizer *)pTok;
  CjkCtx ctx;
  ctx.pOuter = pCtx;
  ctx.xOuter = xToken;
  return p->inner.xTokenize(p->pInner, (void *)&ctx, flags, pText, nText, cjkInnerToken);
}

/* ---------------------------------------------------------------- registration */

/* The documented way to reach FTS5: SELECT fts5(?1) with a bound "fts5_api_ptr" pointer. */
static fts5_api *cjkFts5Api(sqlite3 *db) {
  fts5_api *pApi = 0;
  sqlite3_stmt *pStmt = 0;
  if (sqlite3_prepare_v2(db, "SELECT fts5(?1)", -1, &pStmt, 0) == SQLITE_OK) {
    sqlite3_bind_pointer(pStmt, 1, (void *)&pApi, "fts5_api_ptr", 0);
    sqlite3_step(pStmt);
  }
  sqlite3_finalize(pStmt);
  return pApi;
}

#ifdef _WIN32
__declspec(dllexport)
#endif
int sqlite3_ftscjk_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi) {
  static fts5_tokenizer tokenizer = {cjkCreate, cjkDelete, cjkTokenize};
  fts5_api *pFts;
  int rc;
  sqlite3_api = pApi;
  pFts = cjkFts5Api(db);
  if (pFts == 0) {
    if (pzErrMsg) *pzErrMsg = sqlite3_mprintf("cjk_unicode61: FTS5 is not available");
    return SQLITE_ERROR;
  }
  rc = pFts->xCreateTokenizer(pFts, "cjk_unicode61", (void *)pFts, &tokenizer, 0);
  if (rc != SQLITE_OK && pzErrMsg) {
    *pzErrMsg = sqlite3_mprintf("cjk_unicode61: xCreateTokenizer failed (%d)", rc);
  }
  return rc;
}

#ifdef _WIN32
__declspec(dllexport)
#endif
int sqlite3_fts5_cjk_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi) {
  return sqlite3_ftscjk_init(db, pzErrMsg, pApi);
}
