/*
 * share.pml -- SPIN model of the modes of holdfast's directory lock
 * (src/lib/fs/dirlock.c, "Modes (HF_OPT_MODE: exclusive, shared, slots N)":
 * steps DS1-DS5, invariants SM1-SM6). dirlock.pml checks the exclusive
 * protocol at L (turnstile, claims, judges, withdrawal); this model takes
 * that protocol as its base, in the form the C code builds it (DA0/DA1: the
 * directory made and locked aside, renamed to L), and adds what the modes
 * add: the drain (DS1), the move of shared and slot acquirers from L to
 * their entry (DS2), the fence check after it (DA7), the withdrawal of an
 * entry when DA7 fails, the release of an entry (DS3) and the reap of dead
 * entries by drainers (DS5).
 *
 * Every system call is one atomic step; any process may be delayed between
 * two of them. Directory objects are named by the token of the attempt that
 * made them (dir t; dir 1 is the dead owner's L the lock may start with).
 *
 * Acquire (NA processes x NATT attempts; attempt t has a mode: exclusive,
 * shared or slots with N = NS, chosen per attempt among MODEi's):
 *   A1 (DA0+DA1) rename my directory dir t, made and locked aside, to L
 *      (NOREPLACE: blocks while L exists). Holds LOCK_SH on it until the
 *      attempt is over.
 *   DJ while L exists, judge it (NJ actions per process): a record of a
 *      dead owner (the sound oracle), or no record while its kernel lock is
 *      free (pinned, then LOCK_EX|LOCK_NB): later take L into my claim,
 *      verify the token (or: the same object, record-less), remove; else
 *      restore (NOREPLACE, re-checked) or leave a barrier.
 *   A3 (DA3) fence f = counter + 1.
 *   A4 (DA4) publish my record (with its mode) into dir t through the fd.
 *   A5 (DA5) look at the claims: denied iff a claim holds a record whose
 *      owner is not dead and did not declare the claim its own. It also
 *      notes whether any subdirectory exists (DL8's fstat: claims, entries).
 *   A6 (DA6) read L's record back by path: mine.
 *   DS1 drain (unless DA5 saw no subdirectory and the mode is not slots,
 *      SKIPEMPTY): one read of the state directory (entries and claims, one
 *      step): a denying claim denies (withdraw); an incompatible entry
 *      (exclusive: every entry; shared: s- entries; slots: r- entries, and
 *      s- entries while NS or more of them hold live records) that is dead
 *      (its record's owner dead, or record-less with its kernel lock free)
 *      is reaped (DS5) and the state directory read again; while a live one
 *      remains, wait: read again (the wait for a change). A record-less
 *      entry whose kernel lock is held (a withdrawal in flight) is not a
 *      holder (SM1) and is skipped (RLWAIT=1: waited for).
 *   DS2 (shared, slots) take L into my self-claim, verify by inode it is my
 *      directory (mismatch: restore it, withdraw), rename the self-claim to
 *      my entry r-/s-<f>-<t> (NOREPLACE; the name is mine alone), verified
 *      by inode in the same step.
 *   A7 (DA7) counter == f: ENTER. Failed: withdraw; a shared or slot
 *      acquirer withdraws its entry as it releases it (DS3).
 *   Release: exclusive, the acquirer's own withdrawal W1-W3 (dirlock.pml's:
 *      W1 unlink my record through the fd, W2 if my directory is at L and
 *      record-less take it into my self-claim, verify, remove, W3 drop the
 *      kernel lock); shared and slots (DS3): W1, then rmdir of my entry by
 *      its name, which only my directory ever bears (SM1); then W3.
 *   A crash (CRASH) may stop an attempt after any step that writes, before
 *   entering, in the critical section (CRASHCS) and in its withdrawal or
 *   release (CRASHW): its kernel lock goes, its record stays.
 *   DS5 reap an entry (a drainer): take it into my claim, verify what was
 *   judged (the token; or the same object, record-less, under LOCK_EX),
 *   remove; a mismatch stays in my claim (a barrier while its record
 *   lives), never put back - the reaper then reaps no more (its one claim
 *   is spent; the code's sweeps, not modelled, remove it later).
 *   Not modelled: DS3's fallback (an entry not empty: a renewal's file in
 *   flight, through the self-claim) - renewals of entries (DS4) are not
 *   modelled, so an entry is always empty once its record went.
 *
 * Properties (asserted at the entry, A7, and at every removal):
 *   an exclusive holder enters only when nobody is in the critical section;
 *   a shared one only when no exclusive or slot holder is, a slot one only
 *   when no exclusive or shared holder and fewer than NS slot holders are
 *   (SM2, SM6); no directory is removed while its maker is in its critical
 *   section (SM5: a live holder's entry is never reaped); an exclusive
 *   holder's fence is above every earlier entry's, a shared or slot holder's
 *   above the last exclusive holder's (SM3); an entry holds only its own
 *   attempt's directory (SM1).
 *
 * Not modelled (dirlock.pml checks them at L): separate judges and sweepers
 * of claims (a claim only ever denies or not here), claims looked at one
 * by one, I/O failures, A4 by path, releases by token, renewals (DS4), the
 * time-based verdicts (leaked, expired, ctime) and clocks.
 *
 * Switches (spin -DNAME=value -a share.pml): below.
 */
#ifndef NA
#define NA 2          /* acquirer/holder processes                           */
#endif
#ifndef NATT
#define NATT 2        /* attempts per process                                 */
#endif
#ifndef NS
#define NS 1          /* N of the slot acquirers (all ask the same N)         */
#endif
#ifndef MODE0
#define MODE0 7       /* modes process 0 may use: 1 exclusive, 2 shared, 4 slots */
#endif
#ifndef MODE1
#define MODE1 7
#endif
#ifndef MODE2
#define MODE2 7
#endif
#ifndef NJ
#define NJ 1          /* judgements of L per process (DJ)                     */
#endif
#ifndef NREAP
#define NREAP 2       /* entry reaps per process (DS5)                        */
#endif
#ifndef INITL
#define INITL 0       /* 1: L starts held by a dead owner (token 1, dir 1)    */
#endif
#ifndef CRASH
#define CRASH 1       /* crashes before entering                              */
#endif
#ifndef CRASHCS
#define CRASHCS 1     /* ... in the critical section                          */
#endif
#ifndef CRASHW
#define CRASHW 1      /* ... in the withdrawal and the release                */
#endif
#ifndef SKIPEMPTY
#define SKIPEMPTY 1   /* DS1 skips the read when DA5 saw no subdirectory (not slots) */
#endif
#ifndef RLWAIT
#define RLWAIT 0      /* 1: DS1 waits for record-less entries under a kernel lock */
#endif
#ifndef FENCE
#define FENCE 1       /* assert SM3 (fences)                                  */
#endif
/* weakened variants (each must FAIL) */
#ifndef NOA7
#define NOA7 0        /* 1: shared and slot acquirers skip DA7                */
#endif
#ifndef EARLYA7
#define EARLYA7 0     /* 1: DA7 made before DS2 (shared, slots)               */
#endif
#ifndef NODRAIN
#define NODRAIN 0     /* 1: exclusive acquirers do not drain                  */
#endif
#ifndef SCANREAP
#define SCANREAP 0    /* 1: a drainer that reaped decides from that scan (no read again) */
#endif
#ifndef SHSKIPR
#define SHSKIPR 0     /* 1: slot acquirers skip r- entries; 2: shared ones skip
                         s- entries; 3: slot ones skip s- entries (no count) */
#endif
#ifndef NOVERIFY2
#define NOVERIFY2 0   /* 1: DS2 renames its self-claim without the inode check */
#endif
#ifndef LEAK
#define LEAK 0        /* 1: the protocol as written: a waiter standing at L in
                         DS1 may be judged leaked (it waited past its max-hold)
                         and reaped; the acquirer that reaped may end without a
                         fence (deadline, crash): must FAIL */
#endif
#ifndef RENEW
#define RENEW 0       /* 1: the fix: when its drain is over the acquirer renews
                         its record at L (DR3-DR5: new bytes, a new time, through
                         its fd; not at L with them: withdraw) before DS2/DA7 */
#endif
#ifndef GIVEUP
#define GIVEUP LEAK   /* 1: an attempt may end after judging L (its deadline) */
#endif
#ifndef SLOTCOUNTALL
#define SLOTCOUNTALL 0 /* 1: slots wait only while NS or more s- entries, live or dead,
                          and reap none while fewer (-> never below N: liveness only) */
#endif

#define EXC 1
#define SHR 2
#define SLT 4
#define NT (1 + NA*NATT)              /* tokens = directory objects 1..NT   */
#define NSELF (2*NA*NATT)             /* two self-claims per attempt        */
#define CS2(t) (2*((t) - 2))          /* DS2's self-claim of attempt t      */
#define CSW(t) (2*((t) - 2) + 1)      /* withdrawal / release self-claim    */
#define CJ(i, j) (NSELF + (i)*NJ + (j))   /* process i's claims judging L   */
#define CR(i) (NSELF + NA*NJ + (i))   /* process i's claim reaping entries  */
#define NCL (NSELF + NA*NJ + NA)
#define DECL(c) ((c) < NSELF -> 2 + (c)/2 : 0)
#define GONE 255

byte L;                 /* directory object at L (0: none)                   */
byte cl[NCL];           /* directory object in claim c                       */
byte ent[NT+1];         /* directory object at attempt t's entry name        */
byte own[NT+1];         /* the record in a directory object: its token, 0
                           none, GONE removed                                */
byte md[NT+1];          /* attempt t's mode (in its record, and its entry's
                           name: r- shared, s- slots)                        */
bool sh[NT+1];          /* LOCK_SH held by its maker                         */
bool ex[NT+1];          /* LOCK_EX held by a judge                           */
bool dead[NT+1];        /* oracle: attempt t never again in the critical section */
#if LEAK
bool lk[NT+1];          /* attempt t waited in DS1: its record may be past its
                           max-hold (until renewed)                          */
bit ver[NT+1];          /* the record's bytes: renewed once (RENEW)          */
#define VER(e) ver[e]
#define STALE(x) (dead[x] || lk[x])
#else
#define STALE(x) dead[x]
#define VER(e) 0
#endif
byte counter;           /* the fence counter                                 */
/* ghosts */
bool in[NT+1];          /* attempt t in its critical section                 */
byte inx, insh, insl;   /* exclusive, shared, slot holders in it             */
byte maxf, lastexf;     /* highest fence entered; the last exclusive one's   */

#define LIVEREC(e) (own[e] != 0 && !STALE(own[e]))
#define DENIES(c) (cl[c] != 0 && own[cl[c]] != 0 && own[cl[c]] != DECL(c) && !STALE(own[cl[c]]))

#if CRASH
#define CRW :: d_step { dead[t] = 1; sh[d] = 0; fl = 0; \
                        printf("MSC: P%d(tok %d): crashes\n", _pid, t) }; goto crashed
#else
#define CRW :: false
#endif
#if CRASH && CRASHW
#define CRWW CRW
#else
#define CRWW :: false
#endif

/* remove my verified claim c: unlink its record, rmdir. One step: a record
   appears only by its maker's DA4, once, under its LOCK_SH, so none can
   appear between a verify and the removal (a record-less directory is
   removed under LOCK_EX, a record-ful one held a record already). */
inline remove(c) {
  d_step { printf("MSC: P%d: removes claim%d (dir %d, owner %d)\n", _pid, c, cl[c], own[cl[c]]);
           if
           :: cl[c] != 0 ->
              assert(!in[cl[c]]);              /* SM5: never a holder's directory */
              own[cl[c]] = GONE; cl[c] = 0
           :: else -> skip
           fi }
}

/* restore my claim c to L: re-check the record o read at the verify,
   NOREPLACE; L occupied: it stays, a barrier */
inline restoreL(c) {
  d_step {
    if
    :: cl[c] != 0 && own[cl[c]] == o && L == 0 ->
       printf("MSC: P%d: restores claim%d (dir %d) to L\n", _pid, c, cl[c]);
       L = cl[c]; cl[c] = 0
    :: else ->
       printf("MSC: P%d: restore of claim%d refused (L dir %d): a barrier\n", _pid, c, L)
    fi;
    o = 0 }
}

/* W1-W2 of dirlock.pml: my record through the fd, then my directory if it
   is at L and record-less */
inline w12() {
  d_step { if :: own[d] == t -> own[d] = 0 :: else -> skip fi;
           printf("MSC: P%d(tok %d): W1 unlinks its record in dir %d\n", _pid, t, d) };
  if CRWW :: skip fi;
  d_step { ok = (L == d && own[d] == 0);
           printf("MSC: P%d(tok %d): W2 L (dir %d) is mine and record-less: %d\n", _pid, t, L, ok) };
  if
  :: ok ->
     d_step { if :: L != 0 -> cl[CSW(t)] = L; L = 0 :: else -> skip fi;
              printf("MSC: P%d: takes L into claim%d (dir %d)\n", _pid, CSW(t), cl[CSW(t)]) };
     if CRWW :: skip fi;
     d_step { o = (cl[CSW(t)] != 0 -> own[cl[CSW(t)]] : 255); ok = (cl[CSW(t)] == d && o == 0) };
     if
     :: ok -> o = 0; remove(CSW(t))
     :: !ok && o != 255 -> restoreL(CSW(t))
     :: else -> o = 0
     fi
  :: else -> skip
  fi
}

/* DS3: release (or withdraw) my entry - W1 my record through the fd (only
   mine is ever in my directory, DL1), then rmdir by my entry's name, which
   only my directory ever bears (SM1, asserted): it is removed when it is
   there and empty; gone (a reaper took it) or not empty: left (a reaper's
   claim, or record-less under my kernel lock until W3 - reapable then) */
inline entryrm() {
  d_step { if :: own[d] == t -> own[d] = 0 :: else -> skip fi;
           printf("MSC: P%d(tok %d): W1 unlinks its record in dir %d\n", _pid, t, d) };
  if CRWW :: skip fi;
  d_step {
    if
    :: ent[t] != 0 && own[ent[t]] == 0 ->
       assert(ent[t] == d);           /* SM1: only my directory bears my name */
       assert(!in[d]);                /* SM5 */
       printf("MSC: P%d(tok %d): rmdir its entry (dir %d)\n", _pid, t, d);
       own[d] = GONE; ent[t] = 0
    :: else ->
       printf("MSC: P%d(tok %d): its entry is gone or not empty (dir %d)\n", _pid, t, ent[t])
    fi }
}

/* the entry of an attempt entering: the assertions (in a d_step) */
#define ENTER \
  if \
  :: m == EXC -> assert(inx + insh + insl == 0); inx++; \
                 assert(!FENCE || f > maxf); lastexf = f \
  :: m == SHR -> assert(inx == 0 && insl == 0); insh++; \
                 assert(!FENCE || f > lastexf) \
  :: m == SLT -> assert(inx == 0 && insh == 0 && insl < NS); insl++; \
                 assert(!FENCE || f > lastexf) \
  fi; \
  in[t] = 1; if :: f > maxf -> maxf = f :: else -> skip fi; \
  printf("MSC: P%d(tok %d): ENTERS, mode %d, fence %d (x %d, r %d, s %d)\n", _pid, t, m, f, inx, insh, insl)

#define LEAVE \
  in[t] = 0; dead[t] = 1; \
  if :: m == EXC -> inx-- :: m == SHR -> insh-- :: else -> insl-- fi

/* DS1's verdict on entry x for an acquirer of mode m (in a d_step; nsl:
   live s- entries) */
#if SLOTCOUNTALL
#define SCOUNT(x) (ent[x] != 0 && md[x] == SLT)
#else
#define SCOUNT(x) (ent[x] != 0 && md[x] == SLT && LIVEREC(ent[x]))
#endif
#define INCOMPAT(x) (ent[x] != 0 && \
  (m == EXC || \
   (m == SHR && md[x] == SLT && SHSKIPR != 2) || \
   (m == SLT && ((md[x] == SHR && SHSKIPR != 1) || (md[x] == SLT && nsl >= NS && SHSKIPR != 3)))))
#if SLOTCOUNTALL
#define REAPABLE(x) (INCOMPAT(x) && !(m == SLT && md[x] == SLT) && \
  ((own[ent[x]] != 0 && STALE(own[ent[x]])) || (own[ent[x]] == 0 && !sh[ent[x]] && !ex[ent[x]])))
#else
#define REAPABLE(x) (INCOMPAT(x) && \
  ((own[ent[x]] != 0 && STALE(own[ent[x]])) || (own[ent[x]] == 0 && !sh[ent[x]] && !ex[ent[x]])))
#endif
#if RLWAIT
#define BLOCKS(x) (INCOMPAT(x) && !REAPABLE(x))
#else
#define BLOCKS(x) (INCOMPAT(x) && LIVEREC(ent[x]))
#endif

#if GIVEUP
#define GIVEUPP if :: d_step { dead[t] = 1; printf("MSC: P%d(tok %d): gives up (its deadline)\n", _pid, t) }; goto drop :: skip fi;
#else
#define GIVEUPP
#endif
#define MODEOK(b) ((i == 0 && (MODE0 & (b))) || (i == 1 && (MODE1 & (b))) || (i == 2 && (MODE2 & (b))))

proctype Acq(byte i) {
  byte k = 0, t, d, m, f, o, x, jt, pd, c, nj = 0, nr = 0, nsl;
  bit jv;
  bool ok, fl, sub, live;

  do
  :: k < NATT ->
     d_step { t = 2 + i*NATT + k; d = t; k++ };
     if
     :: d_step { MODEOK(EXC) -> m = EXC; md[t] = m }
     :: d_step { MODEOK(SHR) -> m = SHR; md[t] = m }
     :: d_step { MODEOK(SLT) -> m = SLT; md[t] = m }
     fi;
a1:  skip;   /* A1 (DA0+DA1), or judge L while it exists (DJ) */
     if
     :: d_step { L == 0 -> L = d; sh[d] = 1; fl = 1;
                 printf("MSC: P%d(tok %d): mode %d, dir %d renamed to L\n", _pid, t, m, d) }
     :: d_step { nj < NJ && L != 0 && own[L] != 0 && STALE(own[L]) -> jt = own[L]; jv = VER(L); c = CJ(i, nj); nj++;
                 printf("MSC: P%d: judges L (dir %d, owner %d) dead or leaked\n", _pid, L, jt) };
        d_step { if :: L != 0 -> cl[c] = L; L = 0 :: else -> skip fi;
                 printf("MSC: P%d: takes L into claim%d (dir %d)\n", _pid, c, cl[c]) };
        if
        :: cl[c] != 0 && own[cl[c]] == jt && VER(cl[c]) == jv -> remove(c)
        :: cl[c] != 0 && !(own[cl[c]] == jt && VER(cl[c]) == jv) -> o = own[cl[c]]; restoreL(c)
        :: cl[c] == 0 -> skip
        fi;
        d_step { jt = 0; jv = 0; c = 0 };
        GIVEUPP
        goto a1
     :: d_step { nj < NJ && L != 0 && own[L] == 0 && !sh[L] && !ex[L] -> pd = L; ex[pd] = 1;
                 c = CJ(i, nj); nj++;
                 printf("MSC: P%d: L (dir %d) record-less, its kernel lock free: LOCK_EX\n", _pid, pd) };
        d_step { if :: L != 0 -> cl[c] = L; L = 0 :: else -> skip fi;
                 printf("MSC: P%d: takes L into claim%d (dir %d)\n", _pid, c, cl[c]) };
        if
        :: cl[c] == pd && own[pd] == 0 -> remove(c)
        :: cl[c] != 0 && !(cl[c] == pd && own[pd] == 0) -> o = own[cl[c]]; restoreL(c)
        :: cl[c] == 0 -> skip
        fi;
        d_step { ex[pd] = 0; pd = 0; c = 0 };
        GIVEUPP
        goto a1
     fi;
     if CRW :: skip fi;
     /* A3 */
     d_step { counter++; f = counter; printf("MSC: P%d(tok %d): fence %d\n", _pid, t, f) };
     if CRW :: skip fi;
     /* A4 */
     d_step { ok = (own[d] == 0); if :: ok -> own[d] = t :: else -> skip fi;
              printf("MSC: P%d(tok %d): publishes into dir %d: %d\n", _pid, t, d, ok) };
     if :: !ok -> goto withdrawal :: else -> skip fi;
     if CRW :: skip fi;
     /* A5 */
     d_step { x = 0; sub = 0;
              do
              :: x < NCL -> if :: DENIES(x) -> ok = 0 :: else -> skip fi;
                            if :: cl[x] != 0 -> sub = 1 :: else -> skip fi; x++
              :: else -> break
              od;
              x = 2;
              do
              :: x <= NT -> if :: ent[x] != 0 -> sub = 1 :: else -> skip fi; x++
              :: else -> break
              od; x = 0;
              printf("MSC: P%d(tok %d): claims look -> ok=%d (subdirectories %d)\n", _pid, t, ok, sub) };
     if :: !ok -> goto withdrawal :: else -> skip fi;
     /* A6 */
     d_step { ok = (L != 0 && own[L] == t);
              printf("MSC: P%d(tok %d): read back L (dir %d) ok=%d\n", _pid, t, L, ok) };
     if :: !ok -> goto withdrawal :: else -> skip fi;
     /* DS1 drain */
     if
     :: (NODRAIN && m == EXC) || (SKIPEMPTY && !sub && m != SLT) -> skip
     :: else ->
ds1:    skip;
        d_step {
           /* live s- entries */
           nsl = 0; x = 2;
           do
           :: x <= NT -> if :: SCOUNT(x) -> nsl++ :: else -> skip fi; x++
           :: else -> break
           od;
           /* a denying claim */
           ok = 1; x = 0;
           do
           :: x < NCL -> if :: DENIES(x) -> ok = 0 :: else -> skip fi; x++
           :: else -> break
           od;
           /* an incompatible entry to reap, a live one to wait for */
           live = 0; jt = 0; pd = 0; x = 2;
           do
           :: x <= NT && REAPABLE(x) -> break
           :: x <= NT && !REAPABLE(x) -> if :: BLOCKS(x) -> live = 1 :: else -> skip fi; x++
           :: x > NT -> x = 0; break
           od;
           if
           :: x != 0 && own[ent[x]] != 0 -> jt = own[ent[x]]; jv = VER(ent[x])
           :: x != 0 && own[ent[x]] == 0 -> pd = ent[x]
           :: else -> skip
           fi;
           /* the rest of this scan (SCANREAP) */
           o = x;
           if
           :: x != 0 ->
              x++;
              do
              :: x <= NT -> if :: BLOCKS(x) -> live = 1 :: else -> skip fi; x++
              :: else -> break
              od;
              x = o
           :: else -> skip
           fi;
           o = 0;
           printf("MSC: P%d(tok %d): drain reads: claims ok=%d, reap entry %d (owner %d), live incompatible %d, live s- %d\n",
                  _pid, t, ok, x, jt, live, nsl) };
        if
        :: !ok -> d_step { x = 0; jt = 0; pd = 0; live = 0; nsl = 0 }; goto withdrawal
        :: ok && x != 0 && nr < NREAP ->
           /* DS5: reap entry x */
           if
           :: pd != 0 -> d_step { !ex[pd] && !sh[pd] -> ex[pd] = 1;
                                  printf("MSC: P%d: LOCK_EX on dir %d\n", _pid, pd) }
           :: else -> skip
           fi;
           d_step { nr++; if :: ent[x] != 0 -> cl[CR(i)] = ent[x]; ent[x] = 0 :: else -> skip fi;
                    printf("MSC: P%d: takes entry %d into claim%d (dir %d)\n", _pid, x, CR(i), cl[CR(i)]) };
           if
           :: cl[CR(i)] != 0 && ((jt != 0 && own[cl[CR(i)]] == jt && VER(cl[CR(i)]) == jv) || (jt == 0 && cl[CR(i)] == pd && own[pd] == 0)) ->
              remove(CR(i))
           :: cl[CR(i)] != 0 && !((jt != 0 && own[cl[CR(i)]] == jt && VER(cl[CR(i)]) == jv) || (jt == 0 && cl[CR(i)] == pd && own[pd] == 0)) ->
              /* a mismatch stays in my claim, a barrier while its record
                 lives (DENIES), never put back; my claim is spent: no
                 more reaps by me */
              d_step { nr = NREAP;
                       printf("MSC: P%d: claim%d (dir %d) stays: a barrier\n", _pid, CR(i), cl[CR(i)]) }
           :: cl[CR(i)] == 0 -> skip
           fi;
           d_step { if :: pd != 0 -> ex[pd] = 0 :: else -> skip fi; jt = 0; jv = 0; pd = 0; nsl = 0 };
           if
           :: SCANREAP && !live -> d_step { x = 0; live = 0 }       /* weakened: decides from that scan */
           :: else -> d_step { x = 0; live = 0 }; goto ds1
           fi
        :: ok && x != 0 && nr >= NREAP -> d_step { x = 0; jt = 0; pd = 0; live = 0; nsl = 0 }; goto ds1
        :: ok && x == 0 && live -> d_step { live = 0; nsl = 0;
#if LEAK
                                            lk[t] = 1;
#endif
                                            printf("MSC: P%d(tok %d): waits\n", _pid, t) }; goto ds1     /* wait, read again */
        :: ok && x == 0 && !live -> nsl = 0
        fi
     fi;
#if RENEW && LEAK
     /* the fix: renew the record at L (DR4 through the fd: new bytes, its
        time now), then DR5: still at L with them, else unlink it (DL10) and
        withdraw */
     d_step { if :: own[d] == t -> ver[d] = 1; lk[t] = 0 :: else -> skip fi;
              printf("MSC: P%d(tok %d): renews its record in dir %d\n", _pid, t, d) };
     if CRW :: skip fi;
     d_step { ok = (L == d && own[d] == t);
              printf("MSC: P%d(tok %d): renewed record at L (dir %d): %d\n", _pid, t, L, ok) };
     if :: !ok -> goto withdrawal :: else -> skip fi;
#endif
     if
     :: m == EXC -> skip
     :: else ->
#if EARLYA7
        d_step { ok = (counter == f);
                 printf("MSC: P%d(tok %d): fence check before the move (counter %d, f %d) ok=%d\n", _pid, t, counter, f, ok) };
        if :: !ok -> goto withdrawal :: else -> skip fi;
#endif
        /* DS2: L into my self-claim, verify by inode, rename to my entry */
        d_step { if :: L != 0 -> cl[CS2(t)] = L; L = 0 :: else -> skip fi;
                 printf("MSC: P%d(tok %d): takes L into claim%d (dir %d)\n", _pid, t, CS2(t), cl[CS2(t)]) };
        if CRW :: skip fi;
        if
        :: cl[CS2(t)] == d || (NOVERIFY2 && cl[CS2(t)] != 0) ->
           d_step { assert(NOVERIFY2 || ent[t] == 0); ent[t] = cl[CS2(t)]; cl[CS2(t)] = 0;
                    assert(ent[t] == d);         /* SM1: an entry holds its own directory */
                    printf("MSC: P%d(tok %d): renames claim%d to its entry (dir %d)\n", _pid, t, CS2(t), ent[t]) };
           if CRW :: skip fi
        :: cl[CS2(t)] != d && !(NOVERIFY2 && cl[CS2(t)] != 0) ->
           if
           :: cl[CS2(t)] != 0 -> o = own[cl[CS2(t)]]; restoreL(CS2(t))
           :: else -> skip
           fi;
           dead[t] = 1;
           goto withdrawal
        fi
     fi;
     /* A7: the entry */
#if NOA7 || EARLYA7
     d_step { ok = (m != EXC || counter == f);
#else
     d_step { ok = (counter == f);
#endif
              if :: ok -> ENTER :: else -> dead[t] = 1 fi;
              printf("MSC: P%d(tok %d): fence check (counter %d, f %d) ok=%d\n", _pid, t, counter, f, ok) };
     if
     :: !ok && m == EXC -> goto withdrawal
     :: !ok && m != EXC ->
        /* withdraw the entry as DS3 releases it */
        entryrm();
        goto drop
     :: ok -> skip
     fi;
cs:  /* the critical section; then release, or crash in it */
#if CRASH && CRASHCS
     if
     :: d_step { LEAVE; sh[d] = 0; fl = 0; printf("MSC: P%d(tok %d): crashes holding\n", _pid, t) }; goto crashed
     :: skip
     fi;
#endif
     d_step { LEAVE; printf("MSC: P%d(tok %d): leaves, releases\n", _pid, t) };
     if
     :: m == EXC -> w12()
     :: else -> entryrm()          /* DS3 */
     fi;
     goto drop;

withdrawal: skip;
     d_step { dead[t] = 1; printf("MSC: P%d(tok %d): withdraws\n", _pid, t) };
     w12();
drop: skip;
     d_step { sh[d] = 0; fl = 0; ok = 0; o = 0; x = 0; jt = 0; jv = 0; pd = 0; c = 0; f = 0; m = 0; sub = 0; t = 0; d = 0;
              printf("MSC: P%d: W3 drops its kernel lock: over\n", _pid) }
  :: else -> break
  od;
  goto end_crashed;
crashed: skip;
  d_step { ok = 0; o = 0; x = 0; jt = 0; jv = 0; pd = 0; c = 0; f = 0; m = 0; sub = 0; t = 0; d = 0; k = 0; nj = 0; nr = 0; live = 0; nsl = 0 };
end_crashed:
  skip
}

init {
  byte n = 0;
  atomic {
#if INITL
    own[1] = 1; L = 1; dead[1] = 1;
#endif
    do :: n < NA -> run Acq(n); n++ :: else -> break od
  }
}
