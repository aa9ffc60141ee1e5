/*
 * session.pml -- SPIN model of holdfast's session lock AS BUILT
 * (src/lib/session.c), in the style of dirlock.pml.
 *
 * The file system: one name N (the lock, <name>) and aside names A[0..]
 * (<name>.aside-<16 hex>), each naming at most one record; a record has at
 * most one name (records are published by link once, then only renamed).
 * Every aside name is fresh (nas: 64 random bits in the C code, never
 * reused); nobody ever renames onto an aside name.
 *
 * Steps, as in session.c (each system call one atomic step):
 *   take:  T1 link own record at N (test-and-set); on EEXIST read N and
 *          judge it: live -> refuse; stale -> T2 rename N into a fresh
 *          aside, T3 read it back: the judged record -> "stolen", T1 again
 *          (and unlink the stolen aside once T1 has published or failed,
 *          SL8); another record -> put it back (NOREPLACE) or leave it a
 *          barrier, T1 again; nothing -> T1 again.
 *          T5 after publishing: read the asides one by one; own record: skip;
 *          stale: sweep (rename into own aside, read, unlink; once a sweep
 *          finds its record taken by another mover, no more sweeps); live: a
 *          barrier -> withdraw (W), then, if it can take the barrier
 *          record's kernel lock (flock LOCK_NB), put the barrier back at N
 *          (NOREPLACE), refuse. No barrier: HELD.
 *   W / the pinned drop (SL10): take the record's kernel lock if free; until
 *          no name refers to the record (st_nlink 0: one atomic look at
 *          every name), find it (N by fstatat, else the asides one by one),
 *          rename it into a fresh own aside, fstatat there: ours -> unlink;
 *          gone -> next round; another's (N was replaced between the look
 *          and the rename) -> put it back (NOREPLACE) or leave a barrier.
 *   release (by the holder at the end of its critical section, and by the
 *          lane of the record that starts in an aside): read N; not ours ->
 *          read the asides one by one; not there -> read N again, start
 *          over if it changed; found -> the pinned drop.
 *
 * Properties:
 *   assert(incs <= 1)   never two takers (or a taker and the holder whose
 *                       record starts in an aside) in their HELD state;
 *   assert(NOWHERE(t))  no leftover: once a withdrawal (and, with RELCHECK,
 *                       a release) is finished, no name refers to t.
 *
 * Abstractions (as dirlock.pml): each system call is one atomic step; a
 * record is complete; staleness verdicts come from a sound oracle: a record
 * may be judged stale only once its owner will never again be HELD (dead[],
 * set when an attempt decides to withdraw or starts its release), and then
 * either verdict may come (a young dead record is still live by its age).
 * Unreadable records, symlinks and FIFOs in asides (SL11: not records),
 * clocks (SL2: the oracle), crashes, ENOSPC and I/O errors are not
 * modelled; a killed breaker is the INITBAR start: a live record in an
 * aside whose mover is gone. Reading a file and comparing it (bytes, or the
 * pinned inode) is one step with the read; an unlink of one's own aside,
 * verified just before, is one step with the verification (the name is
 * fresh: in between it can only lose its record to a steal, which the
 * unlink then finds gone). hf_claim_restore's re-check, rename NOREPLACE
 * and re-check is one step (the aside name cannot be given a new record).
 *
 * Switches (spin -DNAME=value -a session.pml):
 */
#ifndef NT
#define NT 2          /* taker processes                                    */
#endif
#ifndef NATT
#define NATT 1        /* attempts (records) per taker                       */
#endif
#ifndef INITSTALE
#define INITSTALE 1   /* N starts with a stale record (its owner is dead)    */
#endif
#ifndef INITBAR
#define INITBAR 1     /* a live holder's record starts in an aside (a killed
                         breaker's), released later by its lane           */
#endif
#ifndef RESTORE
#define RESTORE 1     /* a taker puts a live barrier back at N: 0 never,
                         1 only when it gets its kernel lock (as built),
                         2 always (0.1.0)                                   */
#endif
#ifndef OLDWD
#define OLDWD 0       /* 1: 0.1.0's withdrawal (weakened: must FAIL)         */
#endif
#ifndef YOUNG
#define YOUNG 0       /* 1: the takers' records are always judged live (they
                         are seconds old: plain contention); only the
                         records the model starts with may be stale       */
#endif
#ifndef SWEEPALL
#define SWEEPALL 0    /* 1: a scan keeps sweeping after a sweep lost its
                         record (0.1.0; a sweeper then chases a record its
                         owner is dropping)                                 */
#endif
#ifndef RELCHECK
#define RELCHECK 0    /* 1: also assert no leftover after a release (SH8)     */
#endif
#ifndef TR
#define TR 2          /* T1 rounds per attempt (ROUNDS_MAX is 32)            */
#endif
#ifndef DR
#define DR 6          /* drop rounds (DROP_ROUNDS is 64): the assertion
                         fails if a drop needs more                         */
#endif
#ifndef RR
#define RR 2          /* release look-again rounds                           */
#endif
#ifndef NAS
#define NAS 16        /* aside names available                               */
#endif

#define SREC 1                        /* the stale record at N              */
#define HREC 2                        /* the holder's record in an aside    */
#define FIRST 3                       /* taker attempts: FIRST + i*NATT + k */
#define NREC (FIRST + NT*NATT)
#define NONE 255
#define NAME 254                      /* "at N", for where                  */

byte N;                /* the record at <name> (0: none)                      */
byte A[NAS];           /* the record at aside name j (0: none)                */
byte nas;              /* aside names drawn so far                            */
bool dead[NREC];       /* oracle: the record's owner will never be HELD again */
byte fl[NREC];         /* who holds the record's kernel lock (0: nobody)      */
byte incs;             /* ghost: processes in HELD                            */

/* may record r be judged stale? (the oracle) */
#if YOUNG
#define STALEOK(r) (dead[r] && r < FIRST)
#else
#define STALEOK(r) (dead[r])
#endif

/* no name refers to record t (st_nlink 0) */
#define NOWHERE(t) (N != t && !inaside(t))
inline inaside_set(t, res) {
  res = 0; jj = 0;
  do
  :: jj < nas -> if :: A[jj] == t -> res = 1 :: else -> skip fi; jj++
  :: else -> break
  od;
  jj = 0
}

/* a fresh aside name (CL5: 64 random bits) */
inline fresh(c) {
  assert(nas < NAS); c = nas; nas++
}

/* hf_claim_restore of my aside c to N: re-check, NOREPLACE, re-check */
inline restore(c) {
  d_step { if
           :: A[c] != 0 && N == 0 ->
              printf("MSC: P%d: restore aside%d (rec %d) to N\n", _pid, c, A[c]); N = A[c]; A[c] = 0
           :: else -> printf("MSC: P%d: restore of aside%d refused (N %d): stays\n", _pid, c, N)
           fi }
}

/* SL10, the pinned drop of record t. The look for it (fstat st_nlink, then
   fstatat N, else readdir + fstatat of the asides) is one step: what it
   finds is checked again after the rename, so a record moved meanwhile
   only costs a round. */
inline drop(t) {
  d_step { if :: fl[t] == 0 -> fl[t] = _pid + 1; lk = 1 :: else -> lk = 0 fi };
  dr = 0;
  do
  :: d_step { inaside_set(t, gone); gone = !gone && N != t;
              if
              :: gone -> w = NONE
              :: !gone && N == t -> w = NAME
              :: else -> w = 0; do :: A[w] == t -> break :: else -> w++ od
              fi;
              printf("MSC: P%d: drop rec %d: st_nlink %d, at %d (254: N)\n", _pid, t, !gone, w) };
     if
     :: gone -> break
     :: else -> skip
     fi;
     if :: dr >= DR -> break :: else -> dr++ fi;
     /* rename it into a fresh own aside */
     d_step { fresh(c);
              if
              :: w == NAME && N != 0 -> A[c] = N; N = 0
              :: w != NAME && A[w] != 0 -> A[c] = A[w]; A[w] = 0
              :: else -> c = NONE
              fi;
              printf("MSC: P%d: drop rec %d: moves %d (254: N) into aside%d\n", _pid, t, w, c) };
     if
     :: c == NONE -> skip                        /* ENOENT */
     :: else ->
        /* fstatat: the pinned inode? unlink : another's */
        d_step { if
                 :: A[c] == t -> A[c] = 0; o = 0
                 :: else -> o = A[c]
                 fi;
                 printf("MSC: P%d: drop rec %d: aside%d: %d (0: ours, unlinked, or gone)\n", _pid, t, c, o) };
        if
        :: o != 0 ->
           assert(w == NAME);                    /* only N is ever replaced */
           restore(c)
        :: else -> skip
        fi
     fi;
     w = 0; c = 0; o = 0
  od;
  if :: lk -> fl[t] = 0 :: else -> skip fi;
  lk = 0; dr = 0; w = 0; gone = 0
}

/* 0.1.0's withdrawal (OLDWD): delete_verified at N, else find the same
   bytes in an aside and delete them there; stop when nothing is found */
inline old_withdraw(t) {
  dr = 0;
  do
  :: dr >= DR -> break
  :: else ->
     dr++;
     d_step { fresh(c); if :: N != 0 -> A[c] = N; N = 0 :: else -> c = NONE fi;
              printf("MSC: P%d: withdraw (0.1.0) moves N into aside%d\n", _pid, c) };
     o = 0;
     if
     :: c != NONE ->
        d_step { o = A[c] };                     /* verify: read */
        if
        :: o == t ->
           d_step { if :: A[c] != 0 -> A[c] = 0; o = 1 :: else -> o = 2 fi };  /* unlink */
           if :: o == 1 -> break :: else -> goto oldnext fi      /* TAKEN_FROM_CLAIM: again */
        :: o == 0 -> skip                        /* -ENOENT */
        :: else -> restore(c)                    /* HF_ENOTYOURS */
        fi
     :: else -> skip
     fi;
     /* not at N: find the same bytes in an aside */
     w = NONE; jj = 0;
     do
     :: jj < nas -> d_step { if :: A[jj] == t -> w = jj :: else -> skip fi; jj++ };
        if :: w != NONE -> break :: else -> skip fi
     :: else -> break
     od;
     jj = 0;
     if
     :: w == NONE -> break                       /* nowhere (it thinks): done */
     :: else ->
        d_step { fresh(c); if :: A[w] != 0 -> A[c] = A[w]; A[w] = 0 :: else -> c = NONE fi };
        if
        :: c != NONE -> d_step { if :: A[c] == t -> A[c] = 0; o = 1 :: else -> o = 0 fi };
           if :: o == 1 -> break :: else -> skip fi
        :: else -> skip
        fi
     fi;
oldnext: skip
  od;
  dr = 0; w = 0; c = 0; o = 0
}

/* release record t by its lane: find it, then the pinned drop */
inline release(t) {
  rr = 0;
  do
  :: d_step { o = N; printf("MSC: P%d: release rec %d reads N = %d\n", _pid, t, o) };
     if
     :: o == t -> drop(t); break
     :: else -> skip
     fi;
     w = NONE; jj = 0;
     do
     :: jj < nas -> d_step { if :: A[jj] == t -> w = jj :: else -> skip fi; jj++ };
        if :: w != NONE -> break :: else -> skip fi
     :: else -> break
     od;
     jj = 0;
     if
     :: w != NONE -> drop(t); break
     :: else -> skip
     fi;
     /* nothing of ours beside it: has N changed meanwhile? */
     if
     :: N != o && rr < RR -> rr++
     :: else -> printf("MSC: P%d: release rec %d: not found\n", _pid, t); break
     fi
  od;
#if RELCHECK
  skip;
  d_step { inaside_set(t, gone);
           printf("MSC: P%d: released rec %d; leftover %d\n", _pid, t, gone || N == t);
           assert(!gone && N != t) };
#endif
  rr = 0; o = 0; w = 0; gone = 0
}

proctype Taker(byte i) {
  byte k = 0, tok, r, c, o, j, x, xb, bar, round, stolen, w, dr, rr, jj;
  bool pub, gone, lk, lost;

  do
  :: k < NATT ->
     tok = FIRST + i*NATT + k; k++; round = 0; stolen = NONE;
t1:  skip;  /* T1 publish by link */
     d_step { if :: N == 0 -> N = tok; pub = 1 :: else -> pub = 0 fi;
              printf("MSC: P%d(rec %d): link at N: %d\n", _pid, tok, pub) };
     if :: pub -> goto published :: else -> skip fi;
     if :: stolen != NONE -> A[stolen] = 0; stolen = NONE :: else -> skip fi;   /* SL8 */
     d_step { r = N };                              /* read and judge */
     if
     :: r == 0 -> goto retry                        /* ENOENT */
     :: r != 0 && !STALEOK(r) -> goto refused       /* live: HELD by another */
     :: r != 0 && STALEOK(r) -> goto refused        /* stale, but young: live */
     :: r != 0 && STALEOK(r) ->
        printf("MSC: P%d(rec %d): judges N (rec %d) stale\n", _pid, tok, r)
     fi;
     /* T2 rename N into a fresh aside */
     d_step { fresh(c); if :: N != 0 -> A[c] = N; N = 0 :: else -> c = NONE fi;
              printf("MSC: P%d(rec %d): moves N into aside%d\n", _pid, tok, c) };
     if :: c == NONE -> goto retry :: else -> skip fi;
     /* T3 read it back */
     d_step { o = A[c] };
     if
     :: o == r -> stolen = c                        /* T4: broke it */
     :: o == 0 -> skip                              /* taken from our aside */
     :: o != r && o != 0 ->
        printf("MSC: P%d(rec %d): aside%d holds rec %d, not the judged %d\n", _pid, tok, c, o, r);
        restore(c)
     fi;
     c = 0; o = 0; r = 0;
retry:
     round++;
     if :: round < TR -> goto t1 :: else -> goto refused fi;

published:
     if :: stolen != NONE -> A[stolen] = 0; stolen = NONE :: else -> skip fi;   /* SL8 */
     /* T5 the asides, one by one */
     j = 0; bar = NONE;
     do
     :: j < nas ->
        d_step { x = A[j] };
        if
        :: x == 0 || x == tok -> skip
        :: x != 0 && x != tok && STALEOK(x) && lost ->  /* stale, no more sweeps */
           skip
        :: x != 0 && x != tok && STALEOK(x) && !lost -> /* stale: sweep it */
           d_step { fresh(c); if :: A[j] != 0 -> A[c] = A[j]; A[j] = 0 :: else -> c = NONE fi;
                    printf("MSC: P%d(rec %d): sweeps aside%d (rec %d) into aside%d\n", _pid, tok, j, x, c) };
           if
           :: c != NONE -> d_step { assert(A[c] == x || A[c] == 0);
                                    lost = (A[c] == 0 && !SWEEPALL); A[c] = 0;
                                    printf("MSC: P%d(rec %d): unlinks aside%d (lost %d)\n", _pid, tok, c, lost) }
           :: else -> lost = !SWEEPALL               /* another mover had it */
           fi;
           c = 0
        :: x != 0 && x != tok ->                     /* live (or young): a barrier */
           printf("MSC: P%d(rec %d): aside%d holds live rec %d: a barrier\n", _pid, tok, j, x);
           bar = j; xb = x; break
        fi;
        j++
     :: else -> break
     od;
     j = 0; x = 0; lost = 0;
     if :: bar == NONE -> goto held :: else -> skip fi;

     /* withdraw */
     dead[tok] = 1;
#if OLDWD
     old_withdraw(tok);
#else
     drop(tok);
#endif
     d_step { inaside_set(tok, gone);
              printf("MSC: P%d(rec %d): withdrawn; leftover %d\n", _pid, tok, gone || N == tok);
              assert(!gone && N != tok) };           /* no leftover */
     gone = 0;
#if RESTORE
     /* put the barrier back at N, if nobody is moving it */
     d_step { if
              :: RESTORE == 2 || fl[xb] == 0 -> if :: RESTORE == 1 -> fl[xb] = _pid + 1 :: else -> skip fi; lk = 1
              :: else -> lk = 0
              fi };
     if
     :: lk ->
        d_step { if
                 :: A[bar] == xb && N == 0 -> N = xb; A[bar] = 0;
                    printf("MSC: P%d(rec %d): puts the barrier (rec %d) back at N\n", _pid, tok, xb)
                 :: else -> skip
                 fi;
                 if :: RESTORE == 1 -> fl[xb] = 0 :: else -> skip fi; lk = 0 }
     :: else -> skip
     fi;
#endif
     bar = 0; xb = 0;
     goto refused;

held: skip;
     d_step { incs++; printf("MSC: P%d(rec %d): HELD, incs=%d\n", _pid, tok, incs); assert(incs <= 1) };
     d_step { incs--; dead[tok] = 1 };
     release(tok);
refused:
     if :: stolen != NONE -> A[stolen] = 0; stolen = NONE :: else -> skip fi;
     dead[tok] = 1;
     tok = 0; r = 0; c = 0; o = 0; round = 0; pub = 0
  :: else -> break
  od
}

/* the lane of the record that starts in an aside: HELD until it releases */
proctype Holder() {
  byte o, w, c, dr, rr, jj;
  bool gone, lk;
  d_step { incs--; dead[HREC] = 1 };
  release(HREC)
}

init {
  byte n = 0;
  atomic {
#if INITSTALE
    N = SREC; dead[SREC] = 1;
#endif
#if INITBAR
    A[0] = HREC; nas = 1; incs = 1;
    run Holder();
#endif
    do :: n < NT -> run Taker(n); n++ :: else -> break od
  }
}
