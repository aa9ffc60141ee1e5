/*
 * dirlock.pml -- SPIN model of holdfast's directory lock (src/lib/dirlock.c)
 * with the liveness of record-less directories decided by a kernel lock
 * (flock), the acquirer's own withdrawal through its fd (W1-W3), and
 * publication through that fd (the fix this model proposes: PUBLISH=2; the
 * protocol as first specified published by path, PUBLISH=0, and fails "no
 * leftover"). It descends from the 0.1.0 model (as built), itself derived
 * from research/model/lockdir.pml (seed 000).
 *
 * The C code as built (dirlock.c) makes its new directory in the state
 * directory, takes LOCK_SH on it there, and renames it to L with
 * RENAME_NOREPLACE (DA0/DA1 there); publishes through the fd (PUBLISH=2); and
 * a reaper acts on a verdict only while the judged directory is still at
 * L. Each of these only removes interleavings from this model's: a rename
 * of a locked directory is this model's A1 with A2 and the flock run at
 * once on the acquirer's own directory (no judge in between, never another
 * acquirer's directory), and a reaper that gives up is the judge's give-up,
 * which changes nothing. So every property checked here holds for it; the
 * model keeps the wider protocol, whose extra interleavings (a judge in the
 * mkdir-to-flock window, two acquirers in one directory) it checks too.
 *
 * Every system call is one atomic step; any process may be delayed between
 * two of them. The protocol, step by step:
 *
 * Acquire (one attempt, token tok; NA processes x NATT attempts):
 *   A1 mkdir L. Blocks while L exists (the wait and retry of DJ1: judging L
 *      is what the judges below do).
 *   A2 open L (O_RDONLY|O_DIRECTORY): an fd on whatever directory object is
 *      at L now, maybe not the one made (none: retry). It pins the object:
 *      myd. Then, a separate step, flock(myd, LOCK_SH|LOCK_NB) on the
 *      object, wherever it is by then. It fails only while a judge holds
 *      LOCK_EX on it: the attempt is LOST - it publishes nothing, drops the
 *      fd, retries. Otherwise it holds LOCK_SH until its attempt is over
 *      (W3); a crash drops it (the kernel releases a dead process's flocks).
 *   A3 fence f = counter + 1 (under the counter's flock: one step). An I/O
 *      error (IOFAIL) withdraws.
 *   A4 publish the complete record, a test-and-set (linkat fails if a
 *      record is there):
 *        PUBLISH=2 (default, proposed) through the fd, into myd itself,
 *                  wherever it is now (ENOENT once removed);
 *        PUBLISH=0 by path L/owner, lookup and link one step (0.1.0, and as
 *                  first specified for this change): into whatever is at L;
 *        PUBLISH=1 by path as linkat(2) does it: the lookup of L, then the
 *                  link into that object, two steps (it may have been
 *                  renamed into a claim in between).
 *      Failure (a record there, nothing at L, myd removed) or an I/O error
 *      (IOFAIL): withdraw.
 *   A5 look at the claims: denied iff a claim holds a record whose owner is
 *      not dead and did not declare the claim its own (a self-claim);
 *      record-less claims never deny (HARMLESS=0: every claim denies).
 *      SCANATOMIC=0: claim by claim.
 *   A6 read L's record back by path: it must be mine.
 *   A7 counter == f (under the counter's flock): ENTER. The entry step.
 *   After the critical section the holder releases (its own withdrawal), or
 *   (RELEASER) its process exits holding the lock and another process
 *   releases it by token (below). Denied at A5-A7, failed or I/O error at
 *   A3-A4: its own withdrawal.
 *
 * The acquirer's own withdrawal (OLDW=0); it still has myd's fd:
 *   W1 if myd's record is mine, unlink it through the fd - wherever myd is
 *      (L, anyone's claim). W1ATOMIC=0 (default): read the record, then
 *      unlinkat(fd, "owner") as a separate step, which removes whatever
 *      record is there by then; W1ATOMIC=1: check and unlink one step.
 *   W2 if myd is at L and record-less (fstat of the fd against stat of L:
 *      the fd pins the inode; W2PEEK=0: if myd is at L, record or not): take
 *      L into my own claim (rename NOREPLACE), verify there that it is myd
 *      and record-less, remove it; else restore it (below) or leave it a
 *      barrier. myd elsewhere (in a claim, or removed): leave it; it is
 *      record-less, reapable by the flock once W3 is done.
 *   W3 drop LOCK_SH (close the fd). The attempt is over: with LEFTOVER,
 *      assert that no directory at L or in any claim holds my record.
 *   OLDW=1 (weakened: 0.1.0's W as the acquirer's own withdrawal): instead
 *      of W1 and W2, if L's record is mine take L into my self-claim,
 *      verify, remove (mismatch: restore or barrier); then, unless removed,
 *      find my record in a claim, steal that claim into another self-claim,
 *      verify, remove; then W3.
 *
 * Release by another process with no fd (`holdfast lock release --token`;
 * RELEASER=n: holders A0..A(n-1) may leave it to one): the acquiring process
 * exits in the critical section (its LOCK_SH dropped); later the releaser
 * runs 0.1.0's W as just described and, unless it removed the record, looks
 * at L once more (RELOOK): if L's record is the token, take, verify, remove
 * (mismatch: restore or barrier). LEFTREL=1 asserts no leftover after it.
 *
 * Judges (NR processes x NRACT destructive actions; reapers of L and
 * sweepers of claims; a judge's choice of what to judge is one step):
 *   R  L holds a record whose owner is dead (the sound oracle, below):
 *      later take L into my claim, verify the token there, remove; else
 *      restore or barrier.
 *   RF L is record-less: open L (pin the object d); then LOCK_EX|LOCK_NB on
 *      d (refused while anyone holds LOCK_SH or LOCK_EX: the judge gives up,
 *      which changes nothing and is not modelled); holding it: take L into
 *      my claim, verify it is d and record-less, remove; else restore or
 *      barrier; then drop LOCK_EX. This may reap a live acquirer's fresh
 *      directory between its mkdir and its flock.
 *   RT (ANYTIME=1) the same without the flock: a record-less directory
 *      judged at any time (the C code's ctime verdict past the stale window,
 *      for an acquirer stopped while holding LOCK_SH).
 *   S  a claim holds a record whose owner is dead, or a self-claim holds its
 *      declarer's record: steal it into my claim (rename), verify the token,
 *      remove; a mismatch stays, under my name (never restored).
 *   SF a claim is record-less: pin its object d, LOCK_EX|LOCK_NB on d, steal
 *      the claim, verify it is d and record-less, remove (else it stays,
 *      mine), drop LOCK_EX.
 *   ST (ANYTIME=1) the same without the flock.
 *
 * Shared steps:
 *   restore  my claim back to L: re-check the record read at the verify
 *            (or "none"), rename NOREPLACE; L occupied: it stays, a barrier.
 *   remove   my verified claim: unlink its "owner" (whatever is there now),
 *            then rmdir, which fails if a record appeared in between (the
 *            claim stays; C: claim_remove). Two steps where a record can
 *            appear in a claimed directory (PUBLISH=1, 2); one with
 *            PUBLISH=0, where a record only ever appears at L (exact).
 *
 * Properties:
 *   assert(incs <= 1) on entry: mutual exclusion;
 *   with FENCE, every entry's fence is greater than the previous entry's;
 *   with LEFTOVER, no leftover record when an acquirer's own withdrawal is
 *   over (W3).
 *
 * Abstractions: a record is complete (O_TMPFILE + link); verdicts about a
 * record come from a sound oracle: about token t only once attempt t will
 * never again be in the critical section (it left it, was denied, failed or
 * crashed); record-less directories are judged only by the flock (and, with
 * ANYTIME, at any time); inode numbers appear only against an fd that pins
 * the inode, so the model compares directory objects. Acquirers may crash
 * at any step that writes, before entering and (CRASHW) in their own
 * withdrawal; judges and releasers do not crash. L starts held by a dead
 * owner (token 1, dir 1) so that judges have work.
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
#ifndef READBACK
#define READBACK 1    /* 0: weakened, no read back of L's record (A6)         */
#endif
#ifndef FENCECHECK
#define FENCECHECK 1  /* 0: weakened, no counter == f check at entry (fences must FAIL) */
#endif
#ifndef FENCE
#define FENCE 1       /* 1: assert strictly increasing fences on entry      */
#endif
#ifndef CRASH
#define CRASH 1       /* 1: an attempt may crash at any write step before entering */
#endif
#ifndef CRASHW
#define CRASHW 1      /* 1: ... and at any write step of its own withdrawal  */
#endif
#ifndef IOFAIL
#define IOFAIL 1      /* 1: A3/A4 may fail with an I/O error -> withdrawal   */
#endif
#ifndef SCANATOMIC
#define SCANATOMIC 1  /* 0: the claims are looked at one by one (readdir + reads) */
#endif
#ifndef HARMLESS
#define HARMLESS 1    /* 1: record-less, stale and self-declared claims do not deny;
                         0: every claim denies (the seed's rule)            */
#endif
#ifndef PUBLISH
#define PUBLISH 2     /* A4: 0 by path, one step; 1 by path, lookup + link; 2 through myd's fd */
#endif
#ifndef ANYTIME
#define ANYTIME 0     /* 1: judges may also reap record-less directories ignoring the flock */
#endif
#ifndef OLDW
#define OLDW 0        /* 1: weakened, 0.1.0's W as the acquirer's own withdrawal (leftover must FAIL) */
#endif
#ifndef W1ATOMIC
#define W1ATOMIC 0    /* 1: W1's check and unlink one step; 0: two           */
#endif
#ifndef LEFTOVER
#define LEFTOVER 1    /* 1: assert no leftover after an acquirer's own withdrawal */
#endif
#ifndef RELEASER
#define RELEASER NA   /* n: holders A0..A(n-1) may leave their release to a process with no fd */
#endif
#ifndef RELOOK
#define RELOOK 1      /* 1: that releaser looks at L once more after the claims */
#endif
#ifndef W2PEEK
#define W2PEEK 1      /* W2 takes L only if it is myd AND record-less; 0: if it is myd */
#endif
#ifndef PROBE
#define PROBE 0       /* n > 0: reachability probe n (an assert that must FAIL):
                         1 an attempt lost to a judge's LOCK_EX; 2 LOCK_SH taken on
                         a directory already removed; 3 two acquirers share a
                         directory; 4 a record appears in a verified claim, so
                         its rmdir fails; 5 an any-time judge removes a directory
                         someone holds LOCK_SH on; 6 the releaser's last look at
                         L finds its record */
#endif
#ifndef LEFTREL
#define LEFTREL 0     /* 1: assert no leftover after that releaser's W too   */
#endif

#define NTOK (1 + NA*NATT)
#define NDIR (1 + NA*NATT)
#define NSELF (3*NA*NATT)            /* three claim names per attempt        */
#define NCL  (NSELF + NR*NRACT)
/* the token a claim name declares (self-claims), 0 for plain claims */
#define DECL(c) ((c) < NSELF -> 2 + (c)/3 : 0)
#define GONE 255      /* own[d] of a removed directory                       */
#define REMOVE2 (PUBLISH != 0)

byte L;               /* directory object named L (0: none)                  */
byte cl[NCL];         /* directory object named by claim c                   */
byte own[NDIR+1];     /* record in a directory object: its token, 0 = none,
                         GONE = removed (own[0] stays 0)                     */
byte sh[NDIR+1];      /* LOCK_SH holders of a directory object               */
bool ex[NDIR+1];      /* LOCK_EX held (by a judge)                           */
byte ndirs = 1;
bool dead[NTOK+1];    /* ghost oracle: attempt t is over or will never enter
                         again (set on every path, also where it has no
                         record: uniform values merge states)               */
byte incs;            /* ghost: processes in the critical section            */
byte counter;         /* the fence counter (L.holdfast/fence)                */
byte lastfence;       /* ghost: fence of the last entry                      */
#if LEFTREL
byte rv[NR];          /* ghost: the token judge r judged dead (R, S), 0: none */
#define RV(t) rv[r] = t
#else
#define RV(t) skip
#endif

/* A crash stops an attempt for good, drops its flock, makes it judgeable
   (dead). Crashes after a step that only reads are the same state as a
   crash after the last step that wrote, so they are offered only after
   writes (CRW). */
#if CRASH
#define CRW  :: d_step { dead[tok] = 1; if :: fl -> sh[myd]-- :: else -> skip fi; \
                         printf("MSC: P%d(tok %d): crashes\n", _pid, tok) }; goto crashed
#else
#define CRW  :: false
#endif
#if CRASH && CRASHW
#define CRWW CRW
#else
#define CRWW :: false
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

/* remove my verified claim c: unlink its "owner" (whatever is there), then
   rmdir, which fails if a record appeared since: the claim stays. Stolen
   meanwhile (cl[c] == 0): nothing. */
inline remove(c) {
#if REMOVE2
  d_step { printf("MSC: P%d: unlink claim%d/owner (dir %d, owner %d)\n", _pid, c, cl[c], own[cl[c]]);
           if :: cl[c] != 0 -> own[cl[c]] = 0 :: else -> skip fi };
  d_step { printf("MSC: P%d: rmdir claim%d (dir %d, owner %d)\n", _pid, c, cl[c], own[cl[c]]);
           assert(PROBE != 4 || cl[c] == 0 || own[cl[c]] == 0);
           if :: cl[c] != 0 && own[cl[c]] == 0 -> own[cl[c]] = GONE; cl[c] = 0 :: else -> skip fi }
#else
  d_step { printf("MSC: P%d: unlink claim%d/owner (dir %d, owner %d), rmdir\n", _pid, c, cl[c], own[cl[c]]);
           if :: cl[c] != 0 -> own[cl[c]] = GONE; cl[c] = 0 :: else -> skip fi }
#endif
}

/* the same in 0.1.0's W, which goes on searching unless the rmdir removed
   the claim (C: claim_remove returns 1): wd = 1 only then */
inline removew(c) {
#if REMOVE2
  d_step { printf("MSC: P%d: unlink claim%d/owner (dir %d, owner %d)\n", _pid, c, cl[c], own[cl[c]]);
           if :: cl[c] != 0 -> own[cl[c]] = 0 :: else -> skip fi };
  d_step { printf("MSC: P%d: rmdir claim%d (dir %d, owner %d)\n", _pid, c, cl[c], own[cl[c]]);
           if :: cl[c] != 0 && own[cl[c]] == 0 -> own[cl[c]] = GONE; cl[c] = 0; wd = 1 :: else -> skip fi }
#else
  d_step { printf("MSC: P%d: unlink claim%d/owner (dir %d, owner %d), rmdir\n", _pid, c, cl[c], own[cl[c]]);
           if :: cl[c] != 0 -> own[cl[c]] = GONE; cl[c] = 0; wd = 1 :: else -> skip fi }
#endif
}

/* take L into my claim c (rename NOREPLACE of whatever is at L) */
inline takeL(c) {
  d_step { if :: L != 0 -> cl[c] = L; L = 0 :: else -> skip fi;
           printf("MSC: P%d: takes L into claim%d (dir %d)\n", _pid, c, cl[c]) }
}

/* steal claim x into my claim c */
inline steal(x, c) {
  d_step { if :: cl[x] != 0 -> cl[c] = cl[x]; cl[x] = 0 :: else -> skip fi;
           printf("MSC: P%d: steals claim%d into claim%d (dir %d)\n", _pid, x, c, cl[c]) }
}

/* (in a d_step) does a directory at L or in a claim hold token tok's
   record? -> wd. Every existing directory is at L or in a claim. */
#define FINDREC wd = (own[L] == tok); j = 0; \
           do \
           :: j < NCL -> if :: own[cl[j]] == tok -> wd = 1 :: else -> skip fi; j++ \
           :: else -> break \
           od; j = 0

/* 0.1.0's W: withdraw or release the record of attempt tok by token alone,
   with self-claims c (for L), c+1 (for a steal), c+2 (the last look) */
inline oldwithdraw() {
  d_step { ok = (own[L] == tok);
           printf("MSC: P%d(tok %d): W reads L (dir %d) owner %d\n", _pid, tok, L, own[L]) };
  if
  :: ok ->
     takeL(c);
     d_step { o = (cl[c] != 0 -> own[cl[c]] : 255); ok = 0 };
     if
     :: o == tok -> o = 0; removew(c)
     :: o != tok && o != 255 -> restore(c); o = 0
     :: else -> o = 0
     fi
  :: else -> skip
  fi;
  /* find my record in a claim (readdir + reads: one step, as the steal
     below is verified again), steal it, verify, remove */
  if
  :: !wd ->
     d_step { j = 0;
              do
              :: j < NCL && own[cl[j]] == tok && j != c + 1 -> break
              :: j < NCL && !(own[cl[j]] == tok && j != c + 1) -> j++
              :: j >= NCL -> break
              od;
              printf("MSC: P%d(tok %d): W searches the claims: claim%d (%d: none)\n", _pid, tok, j, NCL) };
     if
     :: j < NCL ->
        d_step { if :: cl[j] != 0 -> cl[c+1] = cl[j]; cl[j] = 0 :: else -> skip fi;
                 printf("MSC: P%d: steals claim%d into claim%d (dir %d)\n", _pid, j, c+1, cl[c+1]);
                 j = 0 };
        if
        :: cl[c+1] != 0 && own[cl[c+1]] == tok -> removew(c+1)
        :: else -> skip                      /* not mine after all: it stays, a claim */
        fi
     :: else -> j = 0
     fi
  :: else -> skip
  fi
}

/* the releaser's last look at L (RELOOK) */
inline relook() {
  if
  :: !wd ->
     d_step { ok = (own[L] == tok);
              printf("MSC: P%d(tok %d): W looks at L again (dir %d) owner %d\n", _pid, tok, L, own[L]) };
     if
     :: ok ->
        takeL(c + 2);
        d_step { o = (cl[c+2] != 0 -> own[cl[c+2]] : 255); ok = 0 };
        if
        :: o == tok -> o = 0; assert(PROBE != 6); remove(c + 2)
        :: o != tok && o != 255 -> restore(c + 2); o = 0
        :: else -> o = 0
        fi
     :: else -> skip
     fi
  :: else -> skip
  fi
}

/* W1: through myd, my record goes, wherever myd is */
inline w1() {
#if W1ATOMIC
  d_step { printf("MSC: P%d(tok %d): W1 myd (dir %d) owner %d: unlinked if mine\n", _pid, tok, myd, own[myd]);
           if :: own[myd] == tok -> own[myd] = 0 :: else -> skip fi };
#else
  d_step { ok = (own[myd] == tok);
           printf("MSC: P%d(tok %d): W1 reads myd (dir %d) owner %d\n", _pid, tok, myd, own[myd]) };
  if
  :: ok ->
     d_step { if :: own[myd] != GONE -> own[myd] = 0 :: else -> skip fi; ok = 0;
              printf("MSC: P%d(tok %d): W1 unlinks myd/owner (dir %d)\n", _pid, tok, myd) }
  :: else -> skip
  fi;
#endif
  if CRWW :: skip fi
}

/* W2: myd at L and record-less: take it, verify, remove */
inline w2() {
  d_step { ok = (L == myd && (!W2PEEK || own[myd] == 0));
           printf("MSC: P%d(tok %d): W2 L (dir %d) is myd (dir %d), record-less: %d\n", _pid, tok, L, myd, ok) };
  if
  :: ok ->
     takeL(c);
     if CRWW :: skip fi;
     d_step { o = (cl[c] != 0 -> own[cl[c]] : 255); ok = (cl[c] == myd && o == 0);
              if :: ok -> o = 0 :: else -> skip fi };
     if
     :: ok -> remove(c)
     :: !ok && o != 255 -> restore(c)
     :: else -> o = 0
     fi
  :: else -> skip
  fi
}

/* the acquirer's own withdrawal, W1-W3 (OLDW=0), or 0.1.0's W + W3 */
inline withdraw() {
#if OLDW
  oldwithdraw();
#else
  w1();
  w2();
#endif
  /* W3: drop the flock; the attempt is over */
  d_step { sh[myd]--; fl = 0; wd = 0; o = 0; ok = 0;
           printf("MSC: P%d(tok %d): W3 drops its flock on dir %d: over\n", _pid, tok, myd);
           FINDREC;
#if LEFTOVER
           assert(!wd);
#endif
           wd = 0 }
}

proctype Acq(byte i) {
  byte k = 0, tok, myd, c, o, j, f;
#if PUBLISH == 1
  byte p;
#endif
  bool ok, wd, fl;

  do
  :: k < NATT ->
     /* A1 mkdir L */
     d_step { L == 0 -> tok = 2 + i*NATT + k; c = 3*(i*NATT + k); k++;
              ndirs++; L = ndirs;
              printf("MSC: P%d(tok %d): mkdir L -> dir %d\n", _pid, tok, L) };
     if CRW :: skip fi;
     /* A2 open L, then LOCK_SH|LOCK_NB on the object */
     d_step { myd = L; if :: myd == 0 -> dead[tok] = 1 :: else -> skip fi;
              printf("MSC: P%d(tok %d): open L -> dir %d\n", _pid, tok, myd) };
     if :: myd == 0 -> goto over :: else -> skip fi;   /* moved away: retry */
     d_step { if :: ex[myd] -> dead[tok] = 1; assert(PROBE != 1) :: else -> sh[myd]++; fl = 1 fi;
              assert(PROBE != 2 || !fl || own[myd] != GONE);
              assert(PROBE != 3 || sh[myd] <= 1);
              printf("MSC: P%d(tok %d): LOCK_SH on dir %d ok=%d\n", _pid, tok, myd, fl) };
     if :: !fl -> goto over :: else -> skip fi;          /* lost: retry */
     /* A3 fence (without FENCE and FENCECHECK the counter is not modelled:
        the entries then over-approximate those with the check) */
#if FENCE || FENCECHECK
     if
     :: d_step { counter++; f = counter; printf("MSC: P%d(tok %d): fence %d\n", _pid, tok, f) }
#if IOFAIL
     :: d_step { dead[tok] = 1; printf("MSC: P%d(tok %d): I/O error at A3\n", _pid, tok) };
        goto withdrawal
#endif
     fi;
     if CRW :: skip fi;
#endif
     /* A4 publish */
#if PUBLISH == 1
     d_step { p = L };                                 /* linkat looks L up ... */
#endif
     if
     :: d_step {
#if PUBLISH == 0
                 if :: L != 0 && own[L] == 0 -> own[L] = tok; ok = 1 :: else -> dead[tok] = 1 fi;
                 printf("MSC: P%d(tok %d): link owner into L (dir %d) ok=%d\n", _pid, tok, L, ok)
#elif PUBLISH == 1
                 if :: p != 0 && own[p] == 0 -> own[p] = tok; ok = 1 :: else -> dead[tok] = 1 fi;
                 printf("MSC: P%d(tok %d): link owner into L, looked up as dir %d, ok=%d\n", _pid, tok, p, ok);
                 p = 0
#else
                 if :: own[myd] == 0 -> own[myd] = tok; ok = 1 :: else -> dead[tok] = 1 fi;
                 printf("MSC: P%d(tok %d): link owner into myd (dir %d) ok=%d\n", _pid, tok, myd, ok)
#endif
               }
#if IOFAIL
     :: d_step { dead[tok] = 1;
#if PUBLISH == 1
                 p = 0;
#endif
                 printf("MSC: P%d(tok %d): I/O error at A4\n", _pid, tok) }
#endif
     fi;
     if :: !ok -> goto withdrawal :: else -> skip fi;    /* EEXIST/ENOENT/EIO */
     if CRW :: skip fi;
#if SCAN
     /* A5 look at the claims */
#if SCANATOMIC
     if CR
     :: d_step { j = 0;
                 do
                 :: j < NCL -> if :: DENIES(j) -> ok = 0 :: else -> skip fi; j++
                 :: else -> break
                 od; j = 0;
                 if :: !ok -> dead[tok] = 1 :: else -> skip fi;
                 printf("MSC: P%d(tok %d): claims look -> ok=%d\n", _pid, tok, ok) }
     fi;
#else
     j = 0;
     do
     :: j < NCL && ok ->
        if CR
        :: d_step { if :: DENIES(j) -> ok = 0; dead[tok] = 1 :: else -> skip fi; j++ }
        fi
     :: else -> break
     od;
     j = 0;
#endif
     if :: !ok -> goto withdrawal :: else -> skip fi;
#endif
     /* A6 read back */
#if READBACK
     if CR
     :: d_step { ok = (L != 0 && own[L] == tok);
                 if :: !ok -> dead[tok] = 1 :: else -> skip fi;
                 printf("MSC: P%d(tok %d): read back L (dir %d) ok=%d\n", _pid, tok, L, ok) }
     fi;
     if :: !ok -> goto withdrawal :: else -> skip fi;
#endif
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
                 :: else -> dead[tok] = 1
                 fi;
                 printf("MSC: P%d(tok %d): fence check (counter %d, f %d) ok=%d (1: ENTERS, incs=%d)\n", _pid, tok, counter, f, ok, incs);
                 f = 0 }
     fi;
     if :: !ok -> goto withdrawal :: else -> skip fi;

cs:  skip;
#if RELEASER > 0
     if
     :: skip
     :: i < RELEASER ->
        /* the acquiring process exits holding the lock; another process
           releases it later by token */
        d_step { sh[myd]--; fl = 0; myd = 0; ok = 0;
                 printf("MSC: P%d(tok %d): exits in the critical section (flock dropped)\n", _pid, tok) };
        d_step { incs--; dead[tok] = 1; printf("MSC: P%d(tok %d): leaves, released by token\n", _pid, tok) };
        oldwithdraw();
#if RELOOK
        relook();
#endif
        d_step { o = 0;
#if LEFTREL
                 /* no record of mine at L or in a claim, except in a judge's
                    claim taken on a verdict about me: it removes it */
                 wd = (own[L] == tok); j = 0;
                 do
                 :: j < NCL -> if :: own[cl[j]] == tok && !(j >= NSELF && rv[(j - NSELF)/NRACT] == tok) -> wd = 1
                               :: else -> skip fi; j++
                 :: else -> break
                 od; j = 0;
                 assert(!wd);
#endif
                 wd = 0 };
        goto over
     fi;
#endif
     d_step { incs--; dead[tok] = 1; ok = 0; printf("MSC: P%d(tok %d): leaves, releases\n", _pid, tok) };
#if FENCE
     /* a crash of the holder, its record left at L. Without FENCE the same
        states as a crash after A4 (A5-A7 only read, and incs is back) */
     if CRWW :: skip fi;
#endif

withdrawal: skip;                 /* dead[tok] is set: the attempt never enters again */
     d_step { f = 0; ok = 0 };
     withdraw();

over: skip;
     d_step { myd = 0; o = 0; j = 0; ok = 0; tok = 0; c = 0; f = 0; fl = 0 }
  :: else -> break
  od;
  goto end_crashed;
crashed: skip;
     d_step { myd = 0; o = 0; j = 0; ok = 0; tok = 0; c = 0; f = 0; k = 0; fl = 0; wd = 0 };
end_crashed:
  skip
}

/* a sweeper's choice of claim n (one transition each, no intermediate
   states): S, a record whose owner is dead or a self-claim holding its
   declarer's record; SF/ST, a record-less claim, pinned. Up to 24 claims. */
#define QS(n) (n < NCL && cl[n] != 0 && own[cl[n]] != 0 && \
               (dead[own[cl[n]]] || (DECL(n) != 0 && own[cl[n]] == DECL(n))))
#define SWS(n) :: d_step { k < NRACT && QS(n) -> x = n; t = own[cl[n]]; RV(t); \
                  printf("MSC: P%d: judges claim%d (dir %d, owner %d) stale\n", _pid, x, cl[x], t) }
#define QF(n) (n < NCL && cl[n] != 0 && own[cl[n]] == 0)
#define SWF(n) :: d_step { k < NRACT && QF(n) -> x = n; d = cl[n]; \
                  printf("MSC: P%d: claim%d (dir %d) record-less, pinned\n", _pid, x, d) }

/* A judge that pins a directory and then finds its flock refused gives up:
   that changes only its own variables, so it is not modelled (the same
   global states are reached by never pinning). */
proctype Reaper(byte r) {
  byte k = 0, t, c, o, x, d;
  bool ok;

  do
  :: k < NRACT -> d_step { own[L] != 0 && dead[own[L]] -> t = own[L]; RV(t);
              printf("MSC: P%d: judges L (dir %d, owner %d) STALE\n", _pid, L, t) };
     /* R: a verdict about L's dead owner t; take L into my claim, verify,
        remove or restore */
     d_step { c = NSELF + r*NRACT + k; k++;
              if :: L != 0 -> cl[c] = L; L = 0 :: else -> skip fi;
              printf("MSC: P%d: takes L into claim%d (dir %d)\n", _pid, c, cl[c]) };
     if
     :: cl[c] != 0 ->
        d_step { o = own[cl[c]]; printf("MSC: P%d: claim%d owner %d (judged %d)\n", _pid, c, o, t) };
        if
        :: o == t -> d_step { o = 0; t = 0 }; remove(c)
        :: else -> d_step { t = 0 }; restore(c)
        fi
     :: else -> skip
     fi;
     d_step { t = 0; c = 0; o = 0; RV(0) }
  :: k < NRACT -> d_step { L != 0 && own[L] == 0 -> d = L;
              printf("MSC: P%d: L (dir %d) record-less, pinned\n", _pid, d) };
     /* RF / RT: L record-less, d pinned: LOCK_EX|LOCK_NB (RF), or not (RT) */
     if
     :: d_step { !ex[d] && sh[d] == 0 -> ex[d] = 1; ok = 1;
                 printf("MSC: P%d: LOCK_EX on dir %d\n", _pid, d) }
#if ANYTIME
     :: skip                                            /* RT: past the window */
#endif
     fi;
     d_step { c = NSELF + r*NRACT + k; k++;
              if :: L != 0 -> cl[c] = L; L = 0 :: else -> skip fi;
              printf("MSC: P%d: takes L into claim%d (dir %d)\n", _pid, c, cl[c]) };
     if
     :: cl[c] != 0 ->
        d_step { o = own[cl[c]]; printf("MSC: P%d: claim%d (dir %d) owner %d (judged dir %d, none)\n", _pid, c, cl[c], o, d);
                 assert(PROBE != 5 || ok || cl[c] != d || o != 0 || sh[d] == 0) };
        if
        :: cl[c] == d && o == 0 -> remove(c)
        :: else -> restore(c)
        fi
     :: else -> skip
     fi;
     d_step { if :: ok -> ex[d] = 0 :: else -> skip fi;
              printf("MSC: P%d: drops its flock on dir %d\n", _pid, d);
              ok = 0; d = 0; t = 0; c = 0; o = 0 }
  :: k < NRACT -> if SWS(0) SWS(1) SWS(2) SWS(3) SWS(4) SWS(5) SWS(6) SWS(7) SWS(8) SWS(9) SWS(10) SWS(11) SWS(12) SWS(13) SWS(14) SWS(15) SWS(16) SWS(17) SWS(18) SWS(19) SWS(20) SWS(21) SWS(22) SWS(23) fi;
     /* S: steal claim x (judged stale, owner t) into my claim, verify, remove */
     d_step { c = NSELF + r*NRACT + k; k++;
              if :: cl[x] != 0 -> cl[c] = cl[x]; cl[x] = 0 :: else -> skip fi;
              printf("MSC: P%d: steals claim%d into claim%d (dir %d)\n", _pid, x, c, cl[c]);
              x = 0 };
     if
     :: cl[c] != 0 && own[cl[c]] == t -> t = 0; remove(c)
     :: else -> skip            /* not what was judged: stays, under my name */
     fi;
     d_step { t = 0; x = 0; c = 0; RV(0) }
  :: k < NRACT -> if SWF(0) SWF(1) SWF(2) SWF(3) SWF(4) SWF(5) SWF(6) SWF(7) SWF(8) SWF(9) SWF(10) SWF(11) SWF(12) SWF(13) SWF(14) SWF(15) SWF(16) SWF(17) SWF(18) SWF(19) SWF(20) SWF(21) SWF(22) SWF(23) fi;
     /* SF / ST: claim x record-less, d pinned: LOCK_EX|LOCK_NB (SF), or not (ST) */
     if
     :: d_step { !ex[d] && sh[d] == 0 -> ex[d] = 1; ok = 1;
                 printf("MSC: P%d: LOCK_EX on dir %d\n", _pid, d) }
#if ANYTIME
     :: skip                                            /* ST: past the window */
#endif
     fi;
     d_step { c = NSELF + r*NRACT + k; k++;
              if :: cl[x] != 0 -> cl[c] = cl[x]; cl[x] = 0 :: else -> skip fi;
              printf("MSC: P%d: steals claim%d into claim%d (dir %d)\n", _pid, x, c, cl[c]);
              x = 0 };
     if
     :: cl[c] == d && own[d] == 0 -> remove(c)
     :: else -> skip            /* not what was judged: stays, under my name */
     fi;
     d_step { if :: ok -> ex[d] = 0 :: else -> skip fi;
              printf("MSC: P%d: drops its flock on dir %d\n", _pid, d);
              ok = 0; x = 0; c = 0; d = 0 }
  :: k >= NRACT -> break
  od
}

init {
  byte n = 0;
  atomic {
    /* L held by a dead owner X (token 1) in dir 1 */
    own[1] = 1; L = 1; dead[1] = 1;
    do :: n < NA -> run Acq(n); n++ :: else -> break od;
    n = 0;
    do :: n < NR -> run Reaper(n); n++ :: else -> break od
  }
}
