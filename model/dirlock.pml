/*
 * dirlock.pml -- SPIN model of holdfast's directory lock AS BUILT
 * (src/lib/dirlock.c), derived from research/model/lockdir.pml (seed 000).
 *
 * What it adds to / changes from the seed's model, step by step as in
 * dirlock.c:
 *   A1 mkdir L                      (blocks while L exists: "wait and retry")
 *   A2 open L -> fd on whatever directory object is at L now (maybe not ours)
 *   A3 fence f = ++counter          (under flock: one atomic step)
 *   A4 publish by path: link of a complete record into L/owner, fails if
 *      one exists (so a record only ever appears in the directory at L)
 *   A5 look at the claims: denied iff some claim holds a record that is not
 *      judged stale and was not declared by its own owner (a self-claim);
 *      claims without a record never deny (see REPORT point: a holder's
 *      record stays in its directory all through its critical section)
 *   A6 read back L's record == mine
 *   A7 counter == f (under flock) -> ENTER. The entry step.
 *   Withdraw / release (W): if L's record is mine, take L into my own
 *      self-claim, verify the token there, remove (unlink record, rmdir);
 *      mismatch: restore with RENAME_NOREPLACE (+ re-check) or leave a
 *      barrier. Then find my record in any claim: steal that claim into my
 *      own self-claim (rename), verify, remove.
 *   Unpublished withdrawal (an I/O error before/at A4): take L into my own
 *      claim only if L has no record and is the object my fd pins; verify
 *      both there; remove, else restore.
 *   Reapers: judge L (record stale, or no record and its creator finished),
 *      take L into their own claim, verify what they judged (token; "no
 *      record"), remove, else restore (NOREPLACE + re-check) or barrier.
 *   Sweepers: judge a claim stale (record stale, no record and creator
 *      finished, or a self-claim whose record is its declarer's), STEAL it
 *      into their own claim (rename), verify, remove; on a mismatch leave it
 *      under their own name (never emptied in place, never restored).
 *
 * Property: assert(incs <= 1) on entry; with FENCE, also every entry's fence
 * is strictly greater than the previous entry's.
 *
 * Abstractions: each system call is one atomic step; a record is complete
 * (published by link of an O_TMPFILE: no temporaries, no partial records);
 * staleness verdicts come from the sound oracle of the seed's model (a
 * verdict about token t only once attempt t will never again be in the
 * critical section; about a record-less directory only once its creator is
 * finished): time, clocks and pid liveness are any mechanism that never
 * misjudges a live holder. Inode numbers are not used as identity anywhere
 * (the C code compares st_ino only against an fd that pins the inode, and
 * an extra inode check on a record-less directory can only refuse more).
 *
 * Switches (spin -DNAME=value -a dirlock.pml):
 */
#ifndef NA
#define NA 2          /* acquirer/holder processes                          */
#endif
#ifndef NATT
#define NATT 2        /* attempts per acquirer (one token each)             */
#endif
#ifndef NR
#define NR 2          /* reaper/sweeper processes                           */
#endif
#ifndef NRACT
#define NRACT 1       /* destructive actions per reaper                     */
#endif
#ifndef SCAN
#define SCAN 1        /* 0: weakened, no claim look after publication (must FAIL) */
#endif
#ifndef FENCECHECK
#define FENCECHECK 1  /* 0: weakened, no counter == f check at entry (fences must FAIL) */
#endif
#ifndef FENCE
#define FENCE 1       /* 1: assert strictly increasing fences on entry      */
#endif
#ifndef CRASH
#define CRASH 1       /* 1: an attempt may crash at any step before entering */
#endif
#ifndef IOFAIL
#define IOFAIL 1      /* 1: A3/A4 may fail with an I/O error -> unpublished withdrawal */
#endif
#ifndef SCANATOMIC
#define SCANATOMIC 1  /* 0: the claims are looked at one by one (readdir + reads) */
#endif
#ifndef HARMLESS
#define HARMLESS 1    /* 1: record-less, stale and self-declared claims do not deny;
                         0: every claim denies (the seed's rule)            */
#endif

#define NTOK (1 + NA*NATT)
#define NDIR (1 + NA*NATT)
#define NSELF (2*NA*NATT)            /* two claim names per attempt          */
#define NCL  (NSELF + NR*NRACT)
/* the token a claim name declares (self-claims), 0 for plain claims */
#define DECL(c) ((c) < NSELF -> 2 + (c)/2 : 0)

byte L;               /* directory object named L (0: none)                  */
byte cl[NCL];         /* directory object named by claim c                   */
byte own[NDIR+1];     /* record in a directory object: its token, 0 = none   */
byte creator[NDIR+1]; /* ghost: the attempt that made it                     */
byte ndirs = 1;
bool dead[NTOK+1];    /* ghost oracle: attempt t is finished / crashed       */
byte incs;            /* ghost: processes in the critical section            */
byte counter;         /* the fence counter (L.holdfast/fence)                */
byte lastfence;       /* ghost: fence of the last entry                      */

#define STALE(t, d) ((t != 0 && dead[t]) || (t == 0 && dead[creator[d]]))

/* A crash stops an attempt for good and makes it judgeable (dead). Crashes
   after a step that only reads are the same state as a crash after the last
   step that wrote, so they are offered only after A1, A3 and A4 (CRW). */
#if CRASH
#define CRW  :: dead[tok] = 1; goto crashed
#else
#define CRW  :: false
#endif
#define CR   :: false

/* does claim c deny entry? (A5) */
#if HARMLESS
#define DENIES(c) (cl[c] != 0 && own[cl[c]] != 0 && own[cl[c]] != DECL(c) && !dead[own[cl[c]]])
#else
#define DENIES(c) (cl[c] != 0)
#endif

/* restore my claim c: re-check the record read at verify (o), rename
   NOREPLACE (only when L is free), else it stays: a barrier */
inline restore(c) {
  d_step {
    if
    :: cl[c] != 0 && own[cl[c]] == o && L == 0 ->
       printf("MSC: P%d: restore claim%d (dir %d) to L\n", _pid, c, cl[c]);
       L = cl[c]; cl[c] = 0
    :: else ->
       printf("MSC: P%d: restore of claim%d refused (L dir %d): stays a barrier\n", _pid, c, L)
    fi
  }
}

/* remove my verified claim c: unlink its record, rmdir it. One step: a
   record is only ever published at L (A4 by path), so nobody can add to a
   directory in my claim; in between it is a record-less claim, which no
   look denies on and which a sweeper would remove just the same. */
inline remove(c) {
  d_step { printf("MSC: P%d: unlink claim%d/owner (dir %d, owner %d), rmdir\n", _pid, c, cl[c], own[cl[c]]);
           if :: cl[c] != 0 -> own[cl[c]] = 0; cl[c] = 0 :: else -> skip fi }
}

/* W: withdraw or release the record of attempt tok, with self-claims
   c (for L) and c+1 (for a steal) */
inline withdraw() {
  d_step { o = (L != 0 -> own[L] : 0);
           printf("MSC: P%d(tok %d): W reads L (dir %d) owner %d\n", _pid, tok, L, o) };
  if
  :: o == tok ->
     d_step { if :: L != 0 -> cl[c] = L; L = 0 :: else -> skip fi;
              printf("MSC: P%d(tok %d): W takes L into self-claim%d (dir %d)\n", _pid, tok, c, cl[c]) };
     d_step { o = (cl[c] != 0 -> own[cl[c]] : 255) };
     if
     :: o == tok -> remove(c); wd = 1
     :: o != tok && o != 255 -> restore(c)
     :: else -> skip
     fi
  :: else -> skip
  fi;
  /* find my record in a claim (readdir + reads: one step, as the steal
     below is verified again), steal it, verify, remove */
  if
  :: !wd ->
     d_step { j = 0;
              do
              :: j < NCL && cl[j] != 0 && own[cl[j]] == tok && j != c + 1 -> break
              :: j < NCL && !(cl[j] != 0 && own[cl[j]] == tok && j != c + 1) -> j++
              :: j >= NCL -> break
              od };
     if
     :: j < NCL ->
        d_step { if :: cl[j] != 0 -> cl[c+1] = cl[j]; cl[j] = 0 :: else -> skip fi;
                 printf("MSC: P%d(tok %d): W steals claim%d into self-claim%d (dir %d)\n", _pid, tok, j, c+1, cl[c+1]) };
        if
        :: cl[c+1] != 0 && own[cl[c+1]] == tok -> remove(c+1)
        :: else -> skip                      /* not mine after all: it stays, a claim */
        fi
     :: else -> skip
     fi
  :: else -> skip
  fi;
  wd = 0; o = 0; j = 0
}

proctype Acq(byte i) {
  byte k = 0, tok, myd, c, o, j, f;
  bool ok, wd;

  do
  :: k < NATT ->
     tok = 2 + i*NATT + k; c = 2*(i*NATT + k); k++;

     /* A1 mkdir L */
     d_step { L == 0 -> ndirs++; own[ndirs] = 0; creator[ndirs] = tok; L = ndirs;
              printf("MSC: P%d(tok %d): mkdir L -> dir %d\n", _pid, tok, L) };
     if CRW :: skip fi;
     /* A2 open L */
     d_step { myd = L; printf("MSC: P%d(tok %d): open L -> dir %d\n", _pid, tok, myd) };
     if :: myd == 0 -> goto over :: else -> skip fi;   /* moved away: retry */
     /* (the fd only pins myd for the unpublished withdrawal) */
     /* A3 fence (without FENCE and FENCECHECK the counter is not modelled:
        the entries then over-approximate those with the check) */
#if FENCE || FENCECHECK
     if
     :: d_step { counter++; f = counter; printf("MSC: P%d(tok %d): fence %d\n", _pid, tok, f) }
#if IOFAIL
     :: goto unpublished
#endif
     fi;
#endif
     if CRW :: skip fi;
     /* A4 publish by path into whatever is at L now */
     if
     :: d_step { if :: L != 0 && own[L] == 0 -> own[L] = tok; ok = 1 :: else -> ok = 0 fi;
                 printf("MSC: P%d(tok %d): link owner into L (dir %d) ok=%d\n", _pid, tok, L, ok) }
#if IOFAIL
     :: goto unpublished
#endif
     fi;
     if :: !ok -> goto over :: else -> skip fi;        /* EEXIST/ENOENT: retry */
     if CRW :: skip fi;
     myd = 0;                                          /* not needed from here on */
#if SCAN
     /* A5 look at the claims */
#if SCANATOMIC
     if CR
     :: d_step { ok = 1; j = 0;
                 do
                 :: j < NCL -> if :: DENIES(j) -> ok = 0 :: else -> skip fi; j++
                 :: else -> break
                 od; j = 0;
                 printf("MSC: P%d(tok %d): claims look -> ok=%d\n", _pid, tok, ok) }
     fi;
#else
     ok = 1; j = 0;
     do
     :: j < NCL && ok ->
        if CR
        :: d_step { if :: DENIES(j) -> ok = 0 :: else -> skip fi; j++ }
        fi
     :: else -> break
     od;
     j = 0;
#endif
     if :: !ok -> goto denied :: else -> skip fi;
#endif
     /* A6 read back */
     if CR
     :: d_step { ok = (L != 0 && own[L] == tok);
                 printf("MSC: P%d(tok %d): read back L (dir %d) ok=%d\n", _pid, tok, L, ok) }
     fi;
     if :: !ok -> goto denied :: else -> skip fi;
     /* A7 fence check: the entry */
     if CR
     :: d_step { ok = (!FENCECHECK || counter == f);
                 if
                 :: ok -> incs++;
                    assert(incs <= 1);
#if FENCE
                    assert(f > lastfence);
#endif
                    lastfence = f
                 :: else -> skip
                 fi;
                 printf("MSC: P%d(tok %d): fence check (counter %d, f %d) ok=%d (1: ENTERS, incs=%d)\n", _pid, tok, counter, f, ok, incs) }
     fi;
     if :: !ok -> goto denied :: else -> skip fi;

cs:  skip;
     d_step { incs--; dead[tok] = 1; printf("MSC: P%d(tok %d): leaves, releases\n", _pid, tok) };
     withdraw();
     goto over;

denied: skip;
     d_step { dead[tok] = 1; f = 0; printf("MSC: P%d(tok %d): denied, withdraws\n", _pid, tok) };
     withdraw();
     goto over;

unpublished: skip;
     /* I/O error before a record of ours exists: the directory the fd pins
        goes only if it is at L without a record, from our own claim */
     d_step { dead[tok] = 1; f = 0; printf("MSC: P%d(tok %d): I/O error, unpublished withdrawal\n", _pid, tok) };
     d_step { ok = (L != 0 && L == myd && own[L] == 0);      /* judge: no record, my fd's object */
              printf("MSC: P%d(tok %d): unpublished: L (dir %d) record-less and mine: %d\n", _pid, tok, L, ok) };
     if
     :: ok ->
        d_step { if :: L != 0 -> cl[c] = L; L = 0 :: else -> skip fi;   /* take whatever is at L */
                 printf("MSC: P%d(tok %d): takes L into claim%d (dir %d)\n", _pid, tok, c, cl[c]) };
        d_step { o = (cl[c] != 0 -> own[cl[c]] : 255); ok = (cl[c] == myd && o == 0) };  /* verify */
        if
        :: ok -> remove(c)
        :: !ok && o != 255 -> restore(c)
        :: else -> skip
        fi
     :: else -> skip
     fi;
     goto over;

crashed:
     myd = 0; o = 0; j = 0; ok = 0; tok = 0; c = 0; f = 0; k = 0;
     goto end_crashed;

over:
     myd = 0; o = 0; j = 0; ok = 0; tok = 0; c = 0; f = 0
  :: else -> break
  od;
end_crashed:
  skip
}

proctype Reaper(byte r) {
  byte k = 0, t, c, o, x;

  do
  :: k < NRACT ->
     /* judge L stale; later take it into my claim, verify, remove or restore */
     d_step { L != 0 && STALE(own[L], L) -> t = own[L];
              printf("MSC: P%d: judges L (dir %d, owner %d) STALE\n", _pid, L, t) };
     c = NSELF + r*NRACT + k; k++;
     d_step { if :: L != 0 -> cl[c] = L; L = 0 :: else -> skip fi;
              printf("MSC: P%d: takes L into claim%d (dir %d)\n", _pid, c, cl[c]) };
     if
     :: cl[c] != 0 ->
        d_step { o = own[cl[c]]; printf("MSC: P%d: claim%d owner %d (judged %d)\n", _pid, c, o, t) };
        if
        :: o == t -> remove(c)
        :: else -> restore(c)
        fi
     :: else -> skip
     fi;
     t = 0; c = 0; o = 0
  :: k < NRACT ->
     /* sweep: judge a claim stale, steal it into my claim, verify, remove */
     atomic {
       x = 0;
       do
       :: x < NCL && cl[x] != 0 &&
          (STALE(own[cl[x]], cl[x]) || (DECL(x) != 0 && own[cl[x]] == DECL(x))) ->
          t = own[cl[x]];
          printf("MSC: P%d: judges claim%d (dir %d, owner %d) stale\n", _pid, x, cl[x], t); break
       :: x < NCL -> x++
       :: x >= NCL -> break
       od
     };
     if
     :: x < NCL ->
        c = NSELF + r*NRACT + k; k++;
        d_step { if :: cl[x] != 0 -> cl[c] = cl[x]; cl[x] = 0 :: else -> skip fi;
                 printf("MSC: P%d: steals claim%d into claim%d (dir %d)\n", _pid, x, c, cl[c]) };
        if
        :: cl[c] != 0 && own[cl[c]] == t -> remove(c)
        :: else -> skip          /* not what was judged: stays, under my name */
        fi
     :: else -> skip
     fi;
     t = 0; x = 0; c = 0
  :: else -> break
  od
}

init {
  byte n = 0;
  atomic {
    /* L held by a dead owner X (token 1) in dir 1 */
    own[1] = 1; creator[1] = 1; L = 1; dead[1] = 1;
    do :: n < NA -> run Acq(n); n++ :: else -> break od;
    n = 0;
    do :: n < NR -> run Reaper(n); n++ :: else -> break od
  }
}
