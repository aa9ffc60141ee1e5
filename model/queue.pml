/*
 * queue.pml - the directory lock's waiters' queue (src/base/wait.c WT8,
 * WT9; src/lib/fs/dirlock.c DQ1-DQ3): liveness, not exclusion.
 *
 * The queue only decides when a waiter attempts; every attempt is the whole
 * protocol, which model/dirlock.pml and model/share.pml check under every
 * interleaving - any schedule of attempts, so also every schedule the queue
 * allows: the queue can delay an acquisition, never admit one. What this
 * model checks is what the queue adds: no ring is lost. Without the cap
 * (WT6's one-second wake-up, left out here), a run in which a waiter sleeps
 * forever while nobody holds the lock is an invalid end state: SPIN reports
 * it (check.sh runs queue* configurations without -E).
 *
 * The lock is abstracted to one test-and-set (an attempt); "gen" counts
 * entries (a directory at L has one inode per entry: DQ1's look). The
 * kernel as used: the FIFO's bytes; each waiter's epoll item, on the FIFO's
 * wait queue in registration order (EPOLLEXCLUSIVE); a write walks that
 * queue, puts each item it passes on its instance's ready list, and stops
 * at the first whose waiter is asleep in epoll_wait (only then does the
 * callback count as an exclusive wake-up); epoll_wait returns for a ready
 * item while the FIFO holds a byte (level-triggered; a woken waiter reads
 * every byte there in one read), and an item added
 * while the FIFO holds a byte is ready at once. A ring writes a byte only
 * while a reader has the FIFO open (the probe, ENXIO), and the bytes go
 * when the last reader closes it.
 *
 * DQ6: a waiter's first refusal, before it registers, is not judged: it
 * registers and attempts again (UNSEEN, as built); it marks only refusals
 * met registered. Its state space at 3 waiters x 2 acquisitions passes
 * 16 GB: check.sh checks it at 4 x 1 with no waiter giving up (at one
 * acquisition, a waiter that may give up can always leave its sleep, so a
 * lost ring would never show) and at 2 x 3, and the waiter without it
 * (UNSEEN=0) at 3 x 2, the bound at which every weakened variant fails.
 *
 * DQ5's refused mark (MARKFAIL: the file system refuses the sticky bit):
 * the waiter leaves the queue for the watch of P (hf_wait_unqueue), a ring
 * it spent passed on (OWED: that holder will not ring), attempts again
 * watched, and from then on sleeps until L moves, marking refusals or not.
 *
 * DQ5: a waiter marks the directory it was refused by (mk[g], g the entry
 * whose directory it is: the mark goes through a descriptor, so it lands on
 * that directory wherever it is); a release rings a marked directory,
 * checked after moving it away (the stat of its claim), and always when
 * the holder came through the queue (DQ4: other waiters may sleep behind a
 * directory they marked before it, woken by nobody else).
 *
 * Configurations (model/check.sh): queue (holds), queue-nopass (fails: a
 * waiter that leaves keeps the ring it was given, WT9), queue-late (fails:
 * registered after the attempt instead of before it, WT2), queue-early
 * (fails: the release rings before the lock is free, DQ2), queue-latemark
 * (fails: the mark after the look, DQ5), queue-noviaq (fails: a holder
 * that came through the queue rings only when marked, DQ4), queue-markfail
 * (holds: marks may be refused), queue-noowed (fails: a waiter whose mark
 * is refused keeps the ring it spent), queue-sleepnow (fails: DQ6's
 * registration followed by a sleep, not by the attempt).
 */
#ifndef NW
#define NW 3          /* waiters                                            */
#endif
#ifndef NATT
#define NATT 2        /* acquisitions per waiter                            */
#endif
#ifndef LEAVE
#define LEAVE 1       /* 1: a waiter may give up (its deadline) once        */
#endif
#ifndef PASS
#define PASS 1        /* 0: weakened, a leaving waiter keeps its ring       */
#endif
#ifndef LATE
#define LATE 0        /* 1: weakened, register after the failed attempt only */
#endif
#ifndef EARLY
#define EARLY 0       /* 1: weakened, ring before the lock is free          */
#endif
#ifndef MARK
#define MARK 1        /* 0: weakened, the waiter marks after its look       */
#endif
#ifndef UNSEEN
#define UNSEEN 1      /* DQ6 (as built): the first refusal registers and
                         attempts again, unmarked; 0: it marks and looks
                         at once (DQ5, DQ1 alone)                          */
#endif
#ifndef VIAQ
#define VIAQ 1        /* 0: weakened, a holder from the queue rings only if marked */
#endif
#ifndef MARKFAIL
#define MARKFAIL 0    /* 1: a waiter's mark may be refused (once per
                         acquisition: a file system refusing the bit): it
                         leaves the queue for the watch (DQ5,
                         hf_wait_unqueue)                                   */
#endif
#ifndef MAXFAIL
#define MAXFAIL 255   /* refused marks in a run, at most (a bound on states) */
#endif
#ifndef OWED
#define OWED 1        /* 0: weakened, a waiter leaving for the watch passes
                         on only the bytes it finds, not the ring it spent  */
#endif
#ifndef SLEEPNOW
#define SLEEPNOW 0    /* 1: weakened DQ6, the first refusal registers and
                         sleeps without the attempt after it               */
#endif
#define NGEN (NW*NATT + 1)

byte holder;          /* 0 free, else the holder's 1 + index                 */
byte gen;             /* entries so far (the inode at L)                     */
byte bytes;           /* rings in the FIFO                                   */
bool reg[NW];         /* registered (an epoll item on the FIFO)              */
byte order[NW];       /* registration order: 1 + position, 0 none            */
byte next_pos = 1;
bool asleep[NW];
bool ready[NW];       /* the item is on its instance's ready list            */
bool mk[NGEN];        /* DQ5: the directory of entry g is marked            */
byte nfail;           /* refused marks so far (MAXFAIL)                      */

inline ring() {
  d_step {
    /* the probe: ENXIO when no reader has the FIFO open - no byte */
    byte pos = 1, k = 0;
    do
    :: k < NW && !reg[k] -> k++
    :: else -> break
    od;
    if :: k < NW -> bytes++ :: else -> pos = next_pos fi;
    /* walk the FIFO's wait queue in registration order */
    do
    :: pos < next_pos ->
       k = 0;
       do
       :: k < NW && !(reg[k] && order[k] == pos) -> k++
       :: else -> break
       od;
       if
       :: k < NW -> ready[k] = 1;
                    if :: asleep[k] -> break :: else -> skip fi
       :: else -> skip
       fi;
       pos++
    :: else -> break
    od;
    pos = 0; k = 0
  }
}

inline register(i) {
  d_step { reg[i] = 1; order[i] = next_pos; next_pos++;
           if :: bytes > 0 -> ready[i] = 1 :: else -> skip fi }
}

inline unregister(i) {
  d_step { reg[i] = 0; order[i] = 0; ready[i] = 0;
           /* the last reader gone: the FIFO's buffer goes with it */
           byte k = 0;
           do
           :: k < NW && !reg[k] -> k++
           :: else -> break
           od;
           if :: k == NW -> bytes = 0 :: else -> skip fi; k = 0 }
}

proctype W(byte i) {
  byte n = 0, seen = 0, mine = 0;
  bool got, left = 0, registered = 0, viaq = 0;
  bool rung = 0;      /* the last wake was a ring (wait.c HF_WOKE_EVENT)     */
  bool watch = 0;     /* on the watch of P for this acquisition (DQ5)        */
  bool mfailed = 0;   /* this acquisition's refused mark is spent            */
  do
  :: n < NATT ->
attempt: skip;
     d_step { if :: holder == 0 -> holder = i + 1; gen++; mine = gen; got = 1
                 :: else -> seen = gen; got = 0 fi };
     if
     :: got && registered -> goto queued_entered
     :: got && !registered -> goto entered
     :: else -> skip
     fi;
#if MARKFAIL
     if
     :: watch ->
        /* on the watch (armed before this attempt, WT2): it marks or not
         * (for the waiters still queued), and sleeps until L moves */
        if :: mk[seen] = 1 :: skip fi;
        (holder == 0 || gen != seen);
        goto attempt
     :: else -> skip
     fi;
#endif
#if UNSEEN && !LATE
     /* DQ6: L found taken before registering is not judged (no mark):
      * register, then the whole attempt */
     if :: !registered && !watch -> register(i); registered = 1; rung = 0;
#if SLEEPNOW
        goto sleep                      /* weakened: no attempt after it */
#else
        goto attempt
#endif
     :: else -> skip fi;
#endif
#if MARKFAIL
     if
     :: !mfailed && registered && nfail < MAXFAIL ->
        /* DQ5: the mark refused: that holder rings nobody - out of the
         * queue (WT9), a ring it spent passed on, then the watch */
        mfailed = 1; watch = 1; nfail++;
        unregister(i); registered = 0;
        if
        :: d_step { bytes > 0 -> bytes-- }; ring()
        :: else ->
           if :: OWED && rung -> ring() :: else -> skip fi
        fi;
        /* the watch set up, the attempt again (WT2) */
        goto attempt
     :: true -> skip                    /* or the mark is set */
     fi;
#endif
#if MARK
     mk[seen] = 1;                      /* DQ5: through its descriptor */
#endif
#if LATE
     /* weakened: no look after registering; a first refusal registers */
     if :: !registered -> register(i); registered = 1 :: else -> skip fi;
#else
     if :: !registered -> register(i); registered = 1 :: else -> skip fi;
     /* DQ1: the directory judged is still at L: sleep; else attempt */
     if
     :: d_step { holder == 0 || gen != seen } -> goto attempt
     :: else -> skip
     fi;
#endif
#if !MARK
     mk[seen] = 1;                      /* weakened: after the look */
#endif
sleep:
     asleep[i] = 1;
     if
     :: d_step { ready[i] && bytes > 0 -> asleep[i] = 0; ready[i] = 0; bytes = 0;
#if MARKFAIL
                 rung = 1               /* only MARKFAIL reads it: no states more */
#endif
               }
        goto attempt                    /* woken: every byte read at once */
     :: d_step { ready[i] && bytes == 0 -> ready[i] = 0 }
        goto sleep                      /* woken for nothing: asleep again */
#if LEAVE
     :: !left -> asleep[i] = 0; left = 1;     /* its deadline: gives up */
        unregister(i); registered = 0;
#if PASS
        if :: d_step { bytes > 0 -> bytes-- }; ring() :: else -> skip fi;
#endif
        n++;
        goto next
#endif
     fi;
queued_entered:
     viaq = 1;                        /* DQ4: it came through the queue, and
                                         stays registered until its release */
entered:
     assert(holder == i + 1);
     n++;
#if EARLY
     if :: mk[mine] || (VIAQ && viaq) -> ring() :: else -> skip fi;
     holder = 0;
#else
     holder = 0;                      /* L moved into its claim */
     /* DQ2, DQ5: marked (its claim's stat), or DQ4: it came through the
      * queue (the ring it was given may have been one of several sleepers') */
     if :: mk[mine] || (VIAQ && viaq) -> ring() :: else -> skip fi;
#endif
     if :: registered -> unregister(i); registered = 0 :: else -> skip fi;
     viaq = 0;
next:
     watch = 0; rung = 0; mfailed = 0   /* DQ5's flag_failed: per acquisition */
  :: else -> break
  od
}

init {
  byte i = 0;
  atomic {
    do :: i < NW -> run W(i); i++ :: else -> break od
  }
}
