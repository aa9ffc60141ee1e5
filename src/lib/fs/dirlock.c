/*
 * dirlock.c - the short directory lock: mkdir-style exclusion, an owner
 * record published by link, claims for every destructive step, a sweep of
 * what crashes leave, and a fence per entry (the counter is fence.c's).
 * Model-checked as built
 * (model/dirlock.pml: its A3-A7 and W1-W3 are DA3-DA7 and DW1-DW3 here;
 * its A1 (mkdir L) and A2 (open, flock) are DA0-DA2, a directory made and
 * locked aside, then renamed to L).
 *
 * On-disk artifacts
 * -----------------
 *   P/L                     the lock: a directory (0700), made in the state
 *                           directory and renamed to L. Its maker holds a
 *                           shared flock(2) on it from before it is at L for
 *                           as long as the owner lives: the directory's
 *                           kernel lock (DL9).
 *   P/L/owner               its owner record, one line of JSON: token, pid,
 *                           pid_start, boot_id, host, acquired, fence,
 *                           max_hold_ms, pidns, timens, boottime_ms, comm
 *                           (owner.c writes it). Published complete or not
 *                           at all.
 *   P/L.holdfast/           the lock's state directory (0700, never removed),
 *                           made complete under .L.holdfast.new-<16 hex> and
 *                           renamed into place (DL16)
 *   P/L.holdfast/.gitignore "*": git shows and stages nothing of it (DL16)
 *   P/L.holdfast/fence, fence.reserve   the fence counter and its durable
 *                           reservation: fence.c (FC1-FC4)
 *   P/L.holdfast/n-<ms>-<hex>/   a new lock directory being prepared: made
 *                           and locked (shared flock) here, then renamed to
 *                           L; a waiter keeps its own between attempts. One
 *                           past the stale window whose kernel lock is free
 *                           is a crashed acquirer's, swept by the next sweep.
 *   P/L.holdfast/queue      the waiters' queue: a FIFO (0600), made by the
 *                           first waiter, never removed (DQ1; wait.c WT8)
 *   P/L (its mode)          01700 once a waiter sleeps behind its holder
 *                           (the sticky bit: DQ5's mark), else 0700
 *   P/L.holdfast/c-<ms>-[<token>-]<hex>/   a claim: a lock directory moved
 *                           aside by someone about to destroy or inspect it;
 *                           <ms> is the wall-clock time it was taken (the
 *                           claim's age), <hex> 64 random bits (never
 *                           reused); <token> when an owner claims its own
 *                           record (release, withdrawal): a self-claim
 *
 * Steps
 * -----
 *   Acquire (one attempt):
 *     DA0 (once per acquisition, kept while waiting) mkdir L.holdfast/n-…,
 *         open it (a descriptor that follows it wherever it is moved) and
 *         take a shared flock on it, without blocking               (DL9)
 *         (a write error here - read-only file system, no space, no
 *         permission - over a live owner at L is HF_EHELD, naming it)
 *     DA1 rename it to L, RENAME_NOREPLACE: the directory appears at L with
 *         its kernel lock already held           (EEXIST: DJ1, keep it)
 *     DA2 (the descriptor of DA0 is the lock's directory now)
 *     DA3 fence f = counter + 1, under flock (fence.c FT1-FT3)      (FC1)
 *     DA4 publish the owner record with f into our directory, through its
 *         descriptor: O_TMPFILE + linkat, never replacing           (DL1)
 *     DA5 look at the claims: fstat(L.holdfast) link count, readdir unless
 *         it says there is no subdirectory (DL8). A claim holding a
 *         complete record whose owner is live and did not declare the claim
 *         its own denies; so does an unreadable record within the stale
 *         window by the claim's name, and any error (DL2, CL4). Record-less,
 *         stale and self-declared claims cannot hide a holder in its
 *         critical section (its record stays in its directory all through).
 *     DA6 read L/owner back at the canonical path: byte-identical   (DL2)
 *     DA7 under flock, counter == f: entered (recorded as the counter's
 *         "entered", fence.c's Enter). Last step.                   (FC1)
 *     The descriptor of DA2 is handed to the caller (hf_lock_info.live_fd):
 *     the kernel lock lives as long as the owner holds it.
 *     A failed attempt after DA1 withdraws (DW) and retries or waits; the
 *     directory of DA0, if it never went to L, is removed by its unique name
 *     when the acquisition ends.
 *   Judge and reap (DJ, L exists):
 *     DJ1 open L, read L/owner. Dead owner (DL6), leaked owner, no complete
 *         record while the directory's kernel lock is free (its maker is
 *         gone: it renamed the directory into L already locked; the judge
 *         keeps the lock exclusively while it reaps) or past the stale
 *         window: reap (DJ2); else held.
 *     DJ2 reap: take L into one's own claim (hf_claim_take, NOREPLACE),
 *         verify what was judged (token; or no record + the same directory,
 *         pinned by the open descriptor), remove it; on a mismatch restore
 *         it (hf_claim_restore: NOREPLACE + re-checks) or leave it as a
 *         barrier.                                             (DL3, DL4)
 *   Withdraw by the acquirer itself (DW; a denied or failed attempt): it
 *     holds the descriptor of its directory, wherever that is now (at L, or
 *     in anyone's claim).
 *     DW1 if the record in it is its own, unlink it through the descriptor
 *         - from then on no record of the attempt exists anywhere (DL10).
 *     DW2 if the directory is at L, take L into one's own self-claim,
 *         verify it is that directory and record-less, remove it; elsewhere
 *         leave it (record-less: its claim's owner removes it, or it is
 *         reapable once DW3 is done).
 *     DW3 close the descriptor: the kernel lock goes.
 *   Release by token (DT; any process, e.g. `holdfast lock release`): if
 *     L/owner is the token's, take L into one's own self-claim, verify the
 *     token there, remove. Else (or on a mismatch, after restoring) find
 *     the record in the claims: steal that claim into one's own claim,
 *     verify, remove. Found nowhere: look at L once more (a reaper that took
 *     it by mistake restores it there), up to four passes while claims
 *     exist.                                                    (DL3, DL5)
 *   Renew by token (DR, hf_dirlock_renew; any process with the token):
 *     DR1 open L (the descriptor pins the directory), read its record: ours
 *         (the token), else HF_ENOTYOURS / HF_ENOTHELD
 *     DR2 judged dead: HF_ELOST (a leaked but live owner may renew: nobody
 *         entered, its record is still at L)
 *     DR3 the same owner, token and fence; acquired and boottime_ms now
 *         (boottime_ms only on the owner's kernel); max-hold as asked
 *     DR4 replace L/owner through the descriptor (a temporary in the same
 *         directory renamed over it): only ever our own record, in our own
 *         directory, wherever it is now (DL1's "only into its own
 *         directory" kept; the replace is the one rename over a record)
 *     DR5 the directory still at L with the renewed bytes: renewed. Else a
 *         reaper or a releaser moved it meanwhile: unlink the renewed record
 *         through the descriptor if it is there (DL10), HF_ELOST.
 *     A reaper that judged the old record finds other bytes in its claim
 *     and puts the renewed one back (DL14); one that judged it before DR4
 *     and removed it after leaves DR4 nothing (-ENOENT: HF_ELOST).
 *   Release by the holder (hf_dirlock_release_kept; hf_lock handles): the
 *     directories the acquisition opened stay open until the release
 *     (hf_dirlock_kept), so the release opens nothing first. If the
 *     directory its live_fd pins is at L (fstat against fstatat), take L
 *     into its self-claim at once and verify there the same inode; remove.
 *     Not at L (moved into a claim: a barrier), or gone from the claim: the
 *     release by token above. A claim holding another inode (L changed
 *     hands between the look and the take) goes back (DL4).      (DL17)
 *   Hold (hf_dirlock_hold): a shared flock of the counter, under which no
 *     acquirer passes DA3 or DA7, taken only while the counter's last entry
 *     is the holder's and its record exists.                      (DL12)
 *   Sweep: a claim whose record's owner is proven dead or leaked (at any
 *     age), a record-less claim whose kernel lock is free, or a record-less,
 *     unreadable or self-claim older than the stale window by its name, is
 *     stolen into one's own claim, verified, removed (by an acquirer denied
 *     by a barrier, and by a holder that saw stale claims on its way in).
 *     Stealing before removing spares a claimer still at work: its next step
 *     finds its claim gone. A new directory n-… older than the stale window
 *     by its name whose kernel lock is free goes too.          (DL5, DL6)
 *
 * Waiting (DQ; wait.c's WT8-WT9, model/queue.pml)
 * -------------------------------------------------
 * How an acquirer that found L held waits; nothing here decides who holds.
 *   DQ1 A waiter registers in L.holdfast/queue (hf_wait_queue: the FIFO
 *       opened for reading, in an epoll instance with EPOLLEXCLUSIVE)
 *       before its next look at L. That look is the whole attempt - or,
 *       when the attempt before it judged a live holder at L, one fstatat:
 *       the same directory (inode) still at L means its leaving rings after
 *       our registration, and we sleep. Then it sleeps until a ring, the
 *       holder's end (pidfd), the cap (WT6) or its deadline, and attempts.
 *   DQ2 Every step that takes L into a claim rings the queue once that
 *       step is over (its claim removed: the waiter woken finds no claim of
 *       ours to judge, and its DA5 no subdirectory to read): a reap, a
 *       withdrawal and a release by token always (a probe: one failed open
 *       when nobody waits); the holder's own release and a shared or slot
 *       holder leaving for its entry (DS2) when the directory they took is
 *       marked (DQ5), seen in the stat of its claim that they make anyway -
 *       an uncontended release costs no system call more. One ring wakes
 *       one waiter, the first registered that is asleep.
 *   DQ3 A waiter that leaves without entering (deadline, cancel, error)
 *       passes on a ring given to it (hf_wait_pass); one that enters
 *       leaves the queue (hf_wait_done) - or, a holder that keeps its
 *       directories (hf_lock handles), at its release (DQ4).
 *   DQ4 A holder that came through the queue rings when it moves L away,
 *       marked or not (a waiter may sleep behind a directory it marked
 *       before this one, and the ring this holder was given may have been
 *       the only one: model/queue.pml, queue-noviaq). It keeps its
 *       registration until its release and rings through its own
 *       descriptor there: one write
 *       (a reader itself, its write never raises SIGPIPE; with no other
 *       reader the byte goes with the FIFO's buffer when it closes). While
 *       it holds it is never asleep in epoll_wait, so the kernel gives no
 *       ring to it (an exclusive wake-up counts only for a sleeper) and
 *       passes on to the next waiter.
 *   DQ5 The mark: a waiting acquirer that judged a live holder at L sets
 *       the sticky bit of that directory through the descriptor that pins
 *       it (fchmod), unless it is set already, then - registered - looks at
 *       L (DQ1): the same directory there means the holder moves it away
 *       after the mark and sees it in its claim's stat: it rings.
 *       Otherwise the waiter attempts at once. A mark that cannot be set
 *       (the file system or a security module refuses fchmod; the state
 *       directory is ours, DL checks, so its holders' directories are too) would leave the waiter asleep in the queue to the cap,
 *       since that holder rings nobody: it leaves the queue for the watch
 *       (hf_wait_unqueue; a ring that woke it is passed on, as the holder
 *       it met will not ring again) and attempts again watched before it
 *       sleeps (WT2).
 *   DQ6 A waiting acquirer's first attempt that finds L taken does not
 *       judge it: it registers in the queue (or on the watch) and makes
 *       the whole attempt at once - judge, reap, mark (DQ5), look (DQ1).
 *       The verdict it would have made before registering could only have
 *       been followed by that attempt (a reap retries; a live holder is
 *       marked and looked at again after the registration), so nothing is
 *       decided on it: one judge per wait instead of two when L changes
 *       hands meanwhile, the common case under contention. That
 *       attempt judges what is at L before it tries the rename (L
 *       taken a moment ago is likely still taken: a refused rename only
 *       leads to the same verdict); L free, it renames at once after.
 *       Try once (wait 0) judges at once, to name the holder.
 *   A queue that cannot be had (not a FIFO, no permission, a read-only
 *   file system) leaves the waiter on the inotify watch of P (wait.c),
 *   where every release wakes every waiter, as before 0.3.
 *
 * Modes (HF_OPT_MODE: exclusive, shared, slots N)
 * --------------------------------------------------
 * Every acquisition, in any mode, passes through L by the steps above: its
 * directory goes to L (DA1), takes a fence (DA3), publishes its record -
 * with "mode" and, for slots, "slots" - (DA4), looks at the claims (DA5)
 * and reads its record back (DA6). L is a turnstile: one acquisition at a
 * time stands in it. Shared and slot holders then leave L and hold from
 * the state directory:
 *   P/L.holdfast/r-<fence>-<token>/  a shared holder's directory: the one
 *                           its acquisition made (DA0), its record in it,
 *                           its kernel lock held by live_fd; <fence> 20
 *                           digits. Made by a rename, never in place.
 *   P/L.holdfast/s-<fence>-<token>/  a slot holder's, the same.
 * Steps after DA6:
 *   DS1 (drain) the holders this acquisition cannot share with: every
 *       entry for an exclusive one; s- entries for a shared one; r- entries
 *       for a slot one, and s- entries while N or more of them are live (N:
 *       its own HF_OPT_SLOTS). Read the state directory (not when DA5's
 *       read saw no entry: none to drain, SM2); judge each
 *       entry it cannot share with as a claim's record is judged (DL6):
 *       dead, leaked, expired or abandoned ones are reaped (DS5); a claim
 *       that may hide a live holder denies (as DA5). While a live one
 *       remains, wait where we stand - at L, record published, not entered
 *       - for a change in the state directory (inotify) or the holder's
 *       end (pidfd), within the acquisition's deadline, then read again.
 *       Every acquisition that comes meanwhile finds L held and queues
 *       behind: a waiting exclusive acquirer is not starved by shared
 *       ones (SM4). Try once (wait 0): HF_EHELD naming the holder.
 *   DS2 (shared and slots) leave L for the entry: take L into our own
 *       self-claim, verify there by inode that it is our directory (the
 *       release's take, DL17; a mismatch goes back, DL4), rename the
 *       self-claim to r-/s-<fence>-<token> (RENAME_NOREPLACE; the name is
 *       ours alone, and so is the self-claim's: the rename moves what was
 *       verified).
 *   DS6 (renew standing) an acquisition that waited in DS1 writes its
 *       record at L again, with its time now, through its descriptor, and
 *       reads it back at L (DR3-DR5's way): before each read of the state
 *       directory once half of its lease (OW6), else of its max-hold, has
 *       passed since its last write, and once more when the drain is over. Not at L with it
 *       any more (reaped meanwhile): withdraw and start again.
 *   DA7 is then the last step, in every mode: the counter still at our
 *       fence (SM2). A shared or slot acquirer that fails it withdraws its
 *       entry as DS3 releases it.
 *   DS3 release (the holder's, through live_fd): its entry, named by its
 *       mode, fence and token, goes in two system calls: its record
 *       through its descriptor (DL1: only its own is ever there; DL10),
 *       then the directory by that name (rmdir), which only its own
 *       directory ever bears (SM1) - it is empty now, and its kernel lock,
 *       held until the end, keeps reapers off it (SM5). Not empty (a
 *       renewal's file in flight): into its self-claim, verified there by
 *       inode, removed. Its record or its directory already gone from its
 *       name: reaped, not ours (HF_ENOTHELD, as at L). By token (another
 *       process): the entry whose name ends in the token taken into a
 *       claim, verified by the record's token, removed. Not found: as DT.
 *   DS4 renew: the record replaced in the entry as DR4 replaces it at L;
 *       renewed when the entry is still at its name with the new bytes.
 *   DS5 reap an entry: only by an acquirer standing at L in DS1 (checked
 *       after every wait): take it into our own claim, verify what was
 *       judged (DL14), remove it; a mismatch (renewed since) stays in our
 *       claim, a barrier while its record lives - never put back, as its
 *       name is always free (a put-back at L is refused when L changed
 *       hands; one to an entry's name could not be). An entry that cannot
 *       be reaped (an error) is waited for as a live one.
 * Invariants:
 *   (SM1) A shared or slot holder is entered only after its entry is at its
 *         r-/s- name with its complete record (DS2) and then DA7 passed; it
 *         stays at that name until its own release (DS3) or a reap of a
 *         dead, leaked or expired holder (DS5), and no other directory
 *         ever bears that name: its token is the maker's alone, DS2 renames
 *         only a self-claim verified to hold the maker's directory, DS5
 *         never puts a reaped one back. The entry's kernel lock is
 *         its maker's from DA0 (DL9), so a judge in another pid namespace
 *         has the same proof as for L.
 *   (SM2) Every acquirer reads the state directory (DA5, DS1) after taking
 *         its fence (DA3) and is entered only when the counter is still at
 *         its fence (DA7). So of two acquisitions X and Y with X's DA7
 *         before Y's DA3, Y sees X's entry (or X at L, or X's record in a
 *         claim) - and one that took its fence between X's DA3 and X's DA7
 *         makes X's DA7 fail. Two holders that cannot share are never both
 *         entered: exclusive ones exclude each other as before (DL2); an
 *         entry is seen by every later acquirer, which drains it (DS1).
 *   (SM3) Fences: a holder's fence is above the fence of every holder it
 *         drained, and no shared or slot holder enters with a fence below
 *         an exclusive holder entered before it (its DA7 fails), so a
 *         resource that keeps the highest exclusive fence it saw can refuse
 *         every holder from before it.
 *   (SM4) A waiting acquirer stands at L (DS1): no acquisition passes DA1
 *         until it enters or gives up (deadline, cancel, death - its L then
 *         reaped as any holder's). Shared acquirers queue behind a waiting
 *         exclusive one; among waiters, L's own order (no FIFO).
 *   (SM5) An entry is removed only by its owner - by its name once its
 *         record went through its descriptor (DS3, a withdrawal; SM1), or
 *         in its self-claim when not empty - or in a reaper's claim after
 *         verifying what was judged (DS5, DL3, DL14); a live holder's entry
 *         is never reaped (DL6's verdicts). A record-less entry (a release
 *         or withdrawal in flight) is reapable once its kernel lock is free
 *         (DL9); until then a drainer counts it as live.
 *   (SM7) No acquisition enters with a record older than the wait it made:
 *         one that waited in DS1 enters with a record written after its
 *         drain (DS6), so a judge never finds a holder leaked that has just
 *         entered. (model/share.pml: share-leak, without DS6, admits a
 *         reaper beside a writer that waited past its max-hold.)
 *   (SM6) Slots: when a slot acquirer enters, the live s- entries it saw in
 *         its last DS1 read were fewer than its N, and none appeared since
 *         (SM2): at most N slot holders that each asked for N.
 *
 * Named points (hf_sys_point; tests pause or crash processes there):
 *   dirlock.acquire.staged after DA0; dirlock.acquire.{made,opened,fenced,
 *     published,scanned,readback,entered} after DA1 (L exists), DA2 (the
 *     same instant: the descriptor is ours already), DA3, DA4, DA5, DA6,
 *     DA7; dirlock.acquire.judged (DJ1 verdict made), .denied (before
 *     withdrawing), .waiting (before a wait);
 *   dirlock.share.draining (DS1, before a wait), dirlock.share.moved (after
 *     DS2's rename to the entry, before DA7);
 *   dirlock.withdraw.unlinked (after DW1);
 *   dirlock.renew.judged (after DR2), dirlock.renew.replaced (after DR4);
 *   dirlock.<role>.{judged,taken,verified,unlinked} for role reap, sweep,
 *     withdraw, release, find (one's record found in a claim): before the
 *     take, after it, after reading the claim, after unlinking its record;
 *   claim.restore.checked (claim.c): after the re-check, before the rename.
 *
 * Invariants
 * ----------
 *   (DL1) Publication is a test-and-set: the record appears complete under
 *         owner (linkat) or not at all, and never replaces another; a
 *         token's record is published only by its own attempt, only into
 *         that attempt's own directory, through its descriptor - so it
 *         exists nowhere else, wherever others moved that directory.
 *   (DL2) A holder enters only after (a) its record was published, (b) a
 *         look after publication found no claim that may hide a live holder
 *         (an error denies), (c) the record read back at the canonical path
 *         is the one it published, (d) the fence check (FC1) passed.
 *   (DL3) Nothing is removed from a lock directory except in one's own
 *         claim, after verifying there the identity that was judged: the
 *         token, or for a record-less directory its inode while a descriptor
 *         pins it (CL1) - or by the acquirer itself, its own record through
 *         its own descriptor (DL10), and then its own record-less entry by
 *         the name only it ever bears (DS3, SM1).
 *   (DL4) A claim is restored only by its creator, never over anything
 *         (RENAME_NOREPLACE) and, when it holds a record, re-checked before
 *         and after (CL3); one that cannot be restored stays, a barrier
 *         (CL4).
 *   (DL5) Nobody empties another's claim in place: a sweeper or a releaser
 *         first steals it into its own claim, so a delayed restorer finds
 *         its name gone and can never put back an emptied directory.
 *   (DL6) Verdicts: dead only on proof (owner.c, OW1-OW3; in another pid
 *         namespace the directory's kernel lock is the proof), and dead wins
 *         over any date; leaked only past max(max_hold, stale) by the
 *         record's own time, boot-relative on this kernel (hf_owner_age_ms);
 *         a record dated more than SKEW_MS in the future by the wall clock
 *         is live (skew); without a complete record: at once when the
 *         directory holds no record and its kernel lock is free, else past
 *         the stale window by the directory's ctime (only the kernel sets
 *         ctime, and every rename or entry change moves it forward, so it
 *         can only understate the age; mtime can be set backwards by anyone
 *         and is never used) or, for a claim, by the time in its name. A
 *         record without a time is dated by the ctime too.
 *   The fence counter's invariants (FC1, FC2, FC3 before) are fence.c's
 *   FC1-FC3.
 *   (DL8) Claims are found without scanning the parent: they live in
 *         L.holdfast/, whose link count (2 + subdirectories, on tmpfs, ext4
 *         and xfs: checked by fstatfs) shows in one fstat that there is none.
 *   (DL9) The kernel lock: a directory's maker holds a shared flock on it
 *         from before it is at L (DA0) until its attempt is over - entered
 *         and released, or withdrawn - and a holder for as long as the owner
 *         holds live_fd. A judge takes it exclusively, without blocking, and
 *         only then reaps a record-less directory at once. So a directory at
 *         L without a record always has a live maker or is reapable at once,
 *         and is never reaped under a live maker except past the stale
 *         window (a stopped maker; safe by the model, whose judges may reap
 *         record-less directories at any time).
 *   (DL10) A failed attempt leaves no record of its own anywhere: it
 *          unlinks its record through the descriptor of the directory it
 *          published into, wherever others moved that directory.
 *   (DL11) Nothing opened here may block: records and directories are
 *          opened O_NONBLOCK | O_NOFOLLOW | O_NOCTTY (a FIFO planted as a
 *          record is unreadable, never waited on), and the counter's flocks
 *          are taken without blocking, within a bound (a process stopped
 *          inside DA3).
 *   (DL12) hf_dirlock_hold succeeds only while the counter's last entry is
 *          the holder's fence on this boot and its record exists (at L or in
 *          a claim); its shared flock of the counter then keeps every
 *          acquirer out of DA3 and DA7 (both take it exclusively) until
 *          hf_dirlock_unhold.
 *   (DL13) An acquire on behalf of another process (o->pid) never waits
 *          forever for that process: when the live holder is it (same pid,
 *          pid namespace, boot and start time) a wait without a deadline
 *          fails at once with -EDEADLK. A bounded wait runs to its deadline
 *          (the process may release meanwhile, from another job); a caller
 *          acquiring for itself waits (another of its threads may release).
 *   (DL14) A record's identity, where a verdict is acted on (a reaper's or
 *          sweeper's verification in its claim), is its token and a digest
 *          of all its bytes: a record renewed (DR4) after it was judged is
 *          not the record judged, and goes back (DL4). Records are never
 *          rewritten otherwise, so for every other record this is the token.
 *   (DL16) The state directory appears complete, with its .gitignore: made
 *          under a temporary name beside L and renamed to L.holdfast with
 *          RENAME_NOREPLACE (EEXIST: another made it first; ours goes).
 *   (DL17) A holder's own release identifies its lock by the inode its
 *          live_fd pins (CL1), never by a name: its directory at L holds
 *          no record but its own (DL1; a directory whose record was removed
 *          was in a claim, DL3, and is never restored, DL4), so taking L
 *          into its self-claim without reading the record first removes
 *          only its own, and the check in the claim (the same inode) is
 *          the verification DL3 asks for. It is DT's take-verify-remove
 *          with the first look made by inode: the model's release
 *          (model/dirlock.pml) is unchanged.
 *   (DL19) holdfast never makes a subdirectory in a lock directory, and
 *          never removes one: a directory at L holding one (a user's or a
 *          tool's) is not reaped nor released. Verified in a claim, it goes
 *          back to L as it was (DL4), and the acquirer or releaser is
 *          refused (HF_EUNREADABLE, the reason naming the subdirectory): no
 *          claim left behind, nothing of the user's removed. Every taker is
 *          refused the same way, at once (a wait does not wait for a
 *          human), until one removes it.
 *   (DL20) A claim holding the attempt's own record (its directory, taken
 *          from L by a reaper or a releaser by token that judged the
 *          directory there before) hides no one but the attempt itself: it
 *          denies this attempt (its directory is not at L), which withdraws
 *          (DW1 empties the claim: nobody restores it now, DL4's re-check)
 *          and starts again, never refused by it - a try-once acquirer
 *          included. A denial and a new attempt, as model/dirlock.pml's
 *          acquirers make them: only the answer to a try-once caller
 *          changes.
 *
 * Hazards
 * -------
 *   - A holder suspended past max(max-hold, stale) is reaped while it still
 *     believes it holds the lock: the resource must check the fence.
 *   - Removing L.holdfast while the lock is in use loses claims (barriers);
 *     the fences go on above the old ones (FC2) unless the wall clock was
 *     set back meanwhile: never do that.
 *   - A renewal racing a reaper can lose (HF_ELOST: the lock is gone) or
 *     leave its directory in the reaper's claim when the reaper's put-back
 *     finds L taken again (a barrier until the owner releases or dies):
 *     never two holders.
 *   - A barrier claim holding a live owner blocks acquirers until that owner
 *     releases (it finds its record in the claim) or is proven dead.
 *   - Another host's owner is never judged dead by pid (NFS): only leaked.
 *     Its kernel lock is not proof either (another kernel's lock).
 *   - A holder in another pid namespace that closes live_fd while it lives
 *     (a process that closes the descriptors it inherited) looks dead to
 *     judges outside its namespace; in its own namespace its pid decides.
 *   - A release by token (a process without the lock's descriptor) can miss
 *     its record while a reaper and a withdrawal move it between L and the
 *     claims (model/check.sh: rel-leftover): it answers "not held" and the
 *     record stays until its owner is proven dead. The holder's own
 *     withdrawal (through its descriptor) never misses.
 *   - Modes: holdfast 0.2 and earlier know nothing of entries (DS2): an
 *     exclusive acquirer of theirs enters beside shared holders. Every
 *     process that uses a lock in a mode other than exclusive must run 0.3
 *     or later.
 *   - An acquisition standing at L while it drains (DS1) holds up every
 *     acquirer behind it for as long as its wait lasts (its deadline), and
 *     waiters pass L in no fixed order: no FIFO among waiters.
 *   - A process stopped (SIGSTOP, a debugger) while it stands at L for
 *     longer than max(max-hold, stale) cannot rewrite its record (DS6):
 *     it is reaped as leaked, notices (its directory left L, or DS6's read
 *     back fails) and starts again - never entered meanwhile.
 *   - A shared or slot holder's own release (DS3) racing a release by its
 *     token from another process: when the other takes the entry first
 *     and the holder then unlinks its record (now in the other's claim),
 *     both answer "not held" though the lock is free; the record-less
 *     claim left is swept once the holder's kernel lock is gone. Both err
 *     towards "you may not have held it", never the other way.
 *   - A shared acquirer does not read r- entries (they share with it): a
 *     dead shared holder's entry stays until an exclusive or slot acquirer
 *     drains it (status shows it dead meanwhile).
 *   - The queue (DQ) orders wake-ups, not entries: an acquirer that was
 *     not waiting may take L between a release and the woken waiter's
 *     attempt (as with flock(2)), and the waiter sleeps again at the head
 *     of the queue. A waiter killed between its wake-up and its attempt,
 *     and a holdfast 0.2 holder (it never rings), leave the next waiter to
 *     the cap (WT6): up to 1.5 s late, never wrong.
 *   - DQ5's mark moves the ctime of the holder's directory once (a marked
 *     one is not marked again): a record-less directory of a stopped
 *     acquirer, which ages by its ctime (DL6), is reaped up to one stale
 *     window later than without waiters.
 *   - A wall clock set back makes records of another kernel look younger
 *     (liveness only); set forward, such a live owner may look leaked:
 *     fencing again. On one kernel ages are boot-relative.
 */
#include "claim.h"
#include "internal.h"
#include "holds.h"
#include "wait.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/vfs.h>
#include <unistd.h>

#define STATE_SUFFIX ".holdfast"
#define CLAIM_PREFIX "c-"
#define NEW_PREFIX "n-"
#define SHARED_PREFIX "r-" /* a shared holder's entry (DS2)       */
#define SLOTS_PREFIX "s-"  /* a slot holder's entry (DS2)         */
#define ENTRY_NAME_MAX (2 + 20 + 1 + HF_TOKEN_LEN + 1)
#define GITIGNORE_FILE ".gitignore"
#define QUEUE_FILE "queue"          /* the waiters' queue, a FIFO (DQ1) */
#define OWNER_MAX 4096
_Static_assert(OWNER_MAX > HF_OWNER_JSON_MAX + 112 + 3, "a record fits (hf_dirlock_record_format)");
#define SKEW_MS 1000      /* a record dated further ahead is clock skew      */
#define MAX_CLAIMS 64     /* claims handled per pass (more: the next pass)   */
#define OPEN_DIR (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY)
#define OPEN_REC (O_NONBLOCK | O_NOCTTY) /* with hf_read_small_at's O_NOFOLLOW */

#ifndef XFS_SUPER_MAGIC
#define XFS_SUPER_MAGIC 0x58465342
#endif

/* One open lock: its parent, its state directory, its settings. */
struct lk {
	int pfd;                        /* P                                 */
	int sfd;                        /* P/L.holdfast                      */
	int ffd;                        /* its fence counter, opened once per
					   acquisition (hf_fence_open), or -1 */
	char base[NAME_MAX + 1];        /* L                                 */
	char sname[NAME_MAX + 16];      /* L.holdfast                        */
	char parent[PATH_MAX];          /* P, for the waiter's inotify watch */
	bool nlink_counts;              /* st_nlink == 2 + subdirectories    */
	int64_t stale_ms, max_hold_ms;
	bool ring;                      /* L was taken: ring the queue (DQ2) */
	bool rang;                      /* rung since the last wake (DQ3, DQ5:
					   a ring spent on that wake is then
					   not owed: it was answered)         */
	bool flag;                      /* a waiting acquisition: mark the
					   holders it sleeps behind (DQ5)     */
	bool flag_failed;               /* a mark could not be set (DQ5)     */
	dev_t held_dev;                 /* the directory at L a live holder  */
	ino_t held_ino;                 /* was judged in (DQ1); 0: none      */
	bool look_later;                /* a waiting acquisition not yet in
					   the queue: L found taken is not
					   judged until it is (DQ6)           */
	bool look_first;                /* the attempt after DQ6's registration:
					   L is judged before the rename is
					   tried (DQ6)                        */
};

enum { REC_NONE, REC_EMPTY, REC_BAD, REC_OK };

/* What is at a place (L, or a claim): a directory, its record. */
struct place {
	int kind;                       /* REC_*                             */
	struct hf_lock_info info;    /* REC_OK                            */
	dev_t dev;                      /* read unless a peek found a record  */
	ino_t ino;
	mode_t mode;                    /* read with dev and ino             */
	int64_t ctime_ms;
	uint64_t digest;                /* REC_OK: FNV-1a of the record's bytes
					   (DL14: with the token, its identity) */
	int fd;                         /* the directory, open while the place
					   is in use (place_done closes it): it
					   pins the inode number (CL1) and is the
					   judge's handle on its kernel lock (DL9);
					   -1 for REC_NONE                     */
};

#define RETRY 1 /* internal: try again at once */
#define TAKEN_UNSEEN 3 /* internal: L is there, not judged yet (DQ6) */
#define HF_EFOREIGN_DIR 2 /* internal: a lock directory with a subdirectory (DL19) */
#define DIR_FOREIGN (-4094) /* internal: HF_EUNREADABLE of DL19, never waited out */

/* --- owner records ---------------------------------------------------------- */

/* The owner record: one line of JSON, owner.c's members (OW4) with the
 * lock's own between the time and pidns; the token first, so readers that
 * only need it find it without a parse (token_peek). Into buf (OWNER_MAX
 * bytes); the length. */
size_t hf_dirlock_record_format(char *buf, const struct hf_owner *me, uint64_t fence,
				int64_t max_hold_ms, int mode, int slots)
{
	char mid[112], *m = mid;
	m = HF_PUT_LIT(m, ",\"fence\":");
	m = hf_put_u64w(m, fence, 1);
	m = HF_PUT_LIT(m, ",\"max_hold_ms\":");
	m = hf_put_u64w(m, (uint64_t)(max_hold_ms > 0 ? max_hold_ms : 0), 1);
	/* an exclusive holder's record is 0.2's, byte for byte */
	if (mode == HF_MODE_SHARED) {
		m = HF_PUT_LIT(m, ",\"mode\":\"shared\"");
	} else if (mode == HF_MODE_SLOTS) {
		m = HF_PUT_LIT(m, ",\"mode\":\"slots\",\"slots\":");
		m = hf_put_u64w(m, (uint64_t)(slots > 0 ? slots : 1), 1);
	}
	*m = '\0';
	char *p = buf;
	*p++ = '{';
	p = hf_owner_put_json(p, me, "acquired", mid);
	p = HF_PUT_LIT(p, "}\n");
	*p = '\0';
	return (size_t)(p - buf);
}

/* DL13: what a record is - the whole file one JSON object (white space
 * around it), no NUL byte, no member twice, a token of HF_TOKEN_LEN
 * lowercase hex digits (what hf_owner_init draws; hf_lock_adopt takes no
 * other), a fence, owner.c's fields well-typed. Unknown members are
 * ignored (a later writer's additions). */
int hf_dirlock_record_parse(const char *buf, size_t len, struct hf_lock_info *ret)
{
	json_error_t err;
	if (memchr(buf, '\0', len))
		return HF_EUNREADABLE; /* a record and junk after a NUL */
	json_t *j = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &err);
	if (!j)
		return HF_EUNREADABLE;
	struct hf_lock_info i;
	memset(&i, 0, sizeof i);
	i.live_fd = -1;
	int rc = hf_owner_from_json(j, "acquired", &i.owner);
	const json_t *f = json_object_get(j, "fence");
	const json_t *m = json_object_get(j, "max_hold_ms");
	const json_t *md = json_object_get(j, "mode"), *sl = json_object_get(j, "slots");
	if (rc == 0 && (!json_is_integer(f) || json_integer_value(f) < 0))
		rc = -EINVAL;
	/* a mode this version does not know is no record of a holder it
	 * could share with: unreadable, never taken for an exclusive one */
	if (rc == 0 && md) {
		const char *v = json_string_value(md);
		if (v && !strcmp(v, "shared")) {
			i.mode = HF_MODE_SHARED;
		} else if (v && !strcmp(v, "slots") && json_is_integer(sl) &&
			   json_integer_value(sl) >= 1 && json_integer_value(sl) <= HF_SLOTS_MAX) {
			i.mode = HF_MODE_SLOTS;
			i.slots = (int)json_integer_value(sl);
		} else if (!v || strcmp(v, "exclusive")) {
			rc = -EINVAL;
		}
	}
	if (rc == 0) {
		i.fence = (uint64_t)json_integer_value(f);
		if (json_is_integer(m) && json_integer_value(m) > 0)
			i.max_hold_ms = json_integer_value(m);
		if (strlen(i.owner.token) != HF_TOKEN_LEN ||
		    strspn(i.owner.token, "0123456789abcdef") != HF_TOKEN_LEN ||
		    !hf_text_ok(i.owner.host, HF_HOST_MAX))
			rc = -EINVAL;
	}
	json_decref(j);
	if (rc < 0)
		return HF_EUNREADABLE;
	*ret = i;
	return 0;
}

/* A record whole (hf_read_small_at, one read): bytes read, -EFBIG when it
 * is longer than OWNER_MAX, or -errno. Never blocks (DL11): a FIFO reads as
 * empty or -EAGAIN. buf: OWNER_MAX + 2 bytes. */
static ssize_t read_small(int dirfd, const char *name, char *buf)
{
	return hf_read_small_at(dirfd, name, OPEN_REC, buf, OWNER_MAX + 2, NULL);
}

#define TOKEN_PREFIX "{\"token\":\""

/* Our own records start with the token: take it without a parse. Only for
 * identity checks (a token is 128 random bits); judging parses in full. */
static bool token_peek(const char *buf, size_t len, struct hf_lock_info *i)
{
	size_t pl = strlen(TOKEN_PREFIX);
	if (len < pl + HF_TOKEN_LEN + 1 || strncmp(buf, TOKEN_PREFIX, pl) != 0)
		return false; /* never a byte past len */
	const char *t = buf + pl;
	unsigned bad = 0; /* no branch per character: read in every verification */
	for (int k = 0; k < HF_TOKEN_LEN; k++) {
		unsigned char c = (unsigned char)t[k];
		bad |= (unsigned)((unsigned char)(c - '0') > 9 && (unsigned char)(c - 'a') > 5);
	}
	if (bad)
		return false;
	if (t[HF_TOKEN_LEN] != '"')
		return false;
	memcpy(i->owner.token, t, HF_TOKEN_LEN);
	i->owner.token[HF_TOKEN_LEN] = '\0';
	return true;
}

bool hf_dirlock_record_token(const char *buf, size_t len, char token[HF_TOKEN_LEN + 1])
{
	struct hf_lock_info i;
	if (!token_peek(buf, len, &i))
		return false;
	memcpy(token, i.owner.token, HF_TOKEN_LEN + 1);
	return true;
}

/* Read what is at dirfd/name into *p: 0 (kind REC_NONE when nothing is
 * there), -errno, HF_EUNSAFE when it is not a directory. The directory is
 * opened without following a symlink and stays open in p->fd until
 * place_done. peek: the token only (identity checks); otherwise the record
 * is parsed and the directory's inode and ctime read (verdicts). */
static int place_read_mode(int dirfd, const char *name, struct place *p, bool peek)
{
	memset(p, 0, sizeof *p);
	p->fd = -1;
	p->info.live_fd = -1;
	int dfd = hf_sys_openat(dirfd, name, OPEN_DIR, 0);
	if (dfd == -ENOENT) {
		p->kind = REC_NONE;
		return 0;
	}
	if (dfd == -ENOTDIR || dfd == -ELOOP)
		return HF_EUNSAFE;
	if (dfd < 0)
		return dfd;
	char buf[OWNER_MAX + 2];
	ssize_t n = read_small(dfd, "owner", buf);
	int rc = 0;
	if (n == -ENOENT)
		p->kind = REC_EMPTY;
	else if (n == -EFBIG || n == -ELOOP || n == -EISDIR || n == -EAGAIN || n == -ENXIO ||
		 n == -EINVAL)
		p->kind = REC_BAD; /* DL11: not a regular record */
	else if (n < 0)
		rc = (int)n;
	else if (peek && token_peek(buf, (size_t)n, &p->info))
		p->kind = REC_OK;
	else
		p->kind = hf_dirlock_record_parse(buf, (size_t)n, &p->info) == 0 ? REC_OK : REC_BAD;
	if (n >= 0)
		p->digest = hf_fnv1a(buf, (size_t)n); /* DL14 */
	if (rc == 0 && (!peek || p->kind != REC_OK)) {
		struct stat st;
		rc = hf_sys_fstat(dfd, &st);
		p->dev = st.st_dev;
		p->ino = st.st_ino;
		p->mode = st.st_mode;
		p->ctime_ms = (int64_t)st.st_ctim.tv_sec * 1000 + st.st_ctim.tv_nsec / 1000000;
	}
	if (rc < 0) {
		hf_sys_close(dfd);
		return rc;
	}
	p->fd = dfd;
	return 0;
}

static void place_done(struct place *p)
{
	if (p->fd >= 0)
		hf_sys_close(p->fd); /* with it, a judge's exclusive kernel lock */
	p->fd = -1;
}

static int place_read(int dirfd, const char *name, struct place *p)
{
	return place_read_mode(dirfd, name, p, false);
}

/* The identity (token) and kind only: for verifications, not verdicts. */
static int place_peek(int dirfd, const char *name, struct place *p)
{
	return place_read_mode(dirfd, name, p, true);
}

/* The claim core's identity of a lock directory: its owner token. */
static int dir_identify(int dirfd, const char *name, char *token, size_t n, void *ctx)
{
	(void)ctx;
	struct place p;
	int rc = place_peek(dirfd, name, &p);
	if (rc < 0)
		return rc;
	place_done(&p);
	if (p.kind == REC_NONE || p.kind == REC_EMPTY)
		return -ENOENT;
	if (p.kind == REC_BAD)
		return HF_EUNREADABLE;
	if (strlen(p.info.owner.token) >= n)
		return HF_EUNREADABLE;
	strcpy(token, p.info.owner.token);
	return 0;
}

/* --- verdicts (DL6) ---------------------------------------------------------- */

static int64_t leak_ms(const struct lk *l, const struct hf_lock_info *i)
{
	int64_t hold = i->max_hold_ms > 0 ? i->max_hold_ms : l->max_hold_ms;
	return hold > l->stale_ms ? hold : l->stale_ms;
}

/* Fill p->info's state and age; `born_ms` dates a place without record (or
 * a record without time). May take the place's kernel lock exclusively (a
 * free one is the proof that its maker is gone, DL9): it is held until
 * place_done, so a reap that follows cannot race a late maker. */
static void judge(const struct lk *l, struct place *p, int64_t born_ms, int64_t now)
{
	struct hf_lock_info *i = &p->info;
	if (p->kind == REC_NONE) {
		i->state = HF_LOCK_FREE;
		return;
	}
	if (p->kind == REC_OK) {
		i->partial = 0;
		bool dated = i->owner.time_ms != 0 || i->owner.boot_ms > 0;
		i->age_ms = dated ? hf_owner_age_ms(&i->owner, now) : now - born_ms;
		if (i->owner.lease_ms > 0) /* OW6: its lease alone, by age */
			i->state = i->age_ms < -SKEW_MS		     ? HF_LOCK_SKEW
				   : i->age_ms >= i->owner.lease_ms ? HF_LOCK_EXPIRED
								    : HF_LOCK_HELD;
		else if (hf_owner_liveness_fd(&i->owner, p->fd) == HF_DEAD)
			i->state = HF_LOCK_DEAD; /* DL6: death is proof whatever the date */
		else if (i->age_ms < -SKEW_MS)
			i->state = HF_LOCK_SKEW;
		else if (i->age_ms > leak_ms(l, i))
			i->state = HF_LOCK_LEAKED;
		else
			i->state = HF_LOCK_HELD;
		if (i->age_ms < 0)
			i->age_ms = 0;
		return;
	}
	i->partial = 1;
	i->age_ms = now - born_ms;
	if (i->age_ms < 0)
		i->age_ms = 0;
	if (p->kind == REC_EMPTY && p->fd >= 0 && hf_kernel_lock_probe(p->fd) == 0) {
		i->state = HF_LOCK_ABANDONED; /* DL6, DL9: its maker is gone */
		return;
	}
	i->state = i->age_ms > l->stale_ms ? HF_LOCK_ABANDONED : HF_LOCK_PARTIAL;
}

static bool reapable(int state)
{
	return state == HF_LOCK_DEAD || state == HF_LOCK_LEAKED || state == HF_LOCK_ABANDONED ||
	       state == HF_LOCK_EXPIRED;
}

/* Is the place now what was judged? By token (CL1); a place without a
 * complete record by its kind and inode (the same directory object: it was
 * moved, never copied) - an inode number is identity only while an open
 * descriptor pins the judged directory: then the number cannot have been
 * handed to a new directory meanwhile (CL1). */
static bool same_as_judged(const struct place *judged, const struct place *now)
{
	if (judged->kind != now->kind)
		return false;
	if (judged->kind == REC_OK) /* CL1; DL14: a renewed record is another */
		return strcmp(judged->info.owner.token, now->info.owner.token) == 0 &&
		       judged->digest == now->digest;
	return judged->fd >= 0 && judged->dev == now->dev && judged->ino == now->ino;
}

/* --- opening a lock --------------------------------------------------------- */

/* DQ2: L was taken by this process's last step (released, reaped, withdrawn
 * from, left for an entry): the step is over, its claim removed - so the
 * waiter it wakes finds no claim of ours to judge - and one waiter is rung. */
static void ring_due(struct lk *l, int qfd)
{
	if (l->ring && qfd >= 0)
		hf_wait_ring_fd(qfd); /* DQ4: through our own reader */
	else if (l->ring && l->sfd >= 0)
		hf_wait_ring(l->sfd, QUEUE_FILE);
	l->rang |= l->ring;
	l->ring = false;
}

static void lk_close(struct lk *l)
{
	ring_due(l, -1);
	if (l->ffd >= 0)
		hf_sys_close(l->ffd);
	l->ffd = -1;
	if (l->sfd >= 0)
		hf_sys_close(l->sfd);
	if (l->pfd >= 0)
		hf_sys_close(l->pfd);
	l->sfd = l->pfd = -1;
}

static bool name_reserved(const char *base)
{
	size_t n = strlen(base), s = strlen(STATE_SUFFIX);
	return n >= s && !strcmp(base + n - s, STATE_SUFFIX);
}

/* DL16: the state directory appears complete, with its own .gitignore
 * ("*": git status and git add -A never see what is in it, the .gitignore
 * included): made under a temporary name ".L.holdfast.new-<16 hex>" beside
 * L, the .gitignore published in it, then renamed to L.holdfast without
 * replacing (EEXIST: another made it first; ours goes). A crash leaves at
 * most that temporary, ignored by git like the state directory. A name too
 * long for the temporary gets a plain mkdir (no .gitignore). */
static int state_make(struct lk *l)
{
	char tmp[NAME_MAX + 1], hex[17];
	int rc = hf_random_hex(hex, 8);
	if (rc < 0)
		return rc;
	if (snprintf(tmp, sizeof tmp, ".%s.new-%s", l->sname, hex) >= (int)sizeof tmp)
		return hf_sys_mkdirat(l->pfd, l->sname, 0700);
	rc = hf_sys_mkdirat(l->pfd, tmp, 0700);
	if (rc < 0)
		return rc;
	int tfd = hf_sys_openat(l->pfd, tmp, OPEN_DIR, 0);
	rc = tfd;
	if (tfd >= 0) {
		rc = hf_publish_file_at(tfd, GITIGNORE_FILE, "*\n", 2, 0600, false);
		hf_sys_close(tfd);
	}
	if (rc == 0)
		rc = hf_sys_renameat2(l->pfd, tmp, l->pfd, l->sname, RENAME_NOREPLACE);
	if (rc == -ENOTEMPTY)
		rc = -EEXIST;
	if (rc < 0) {
		char gi[NAME_MAX + 16];
		snprintf(gi, sizeof gi, "%s/" GITIGNORE_FILE, tmp);
		hf_sys_unlinkat(l->pfd, gi, 0);
		hf_sys_unlinkat(l->pfd, tmp, AT_REMOVEDIR);
	}
	return rc;
}

static int lk_open(struct lk *l, const char *path, int64_t stale_ms, int64_t max_hold_ms)
{
	/* every field, not a memset: parent is PATH_MAX bytes, and this runs
	 * in every acquisition and release */
	l->pfd = l->sfd = l->ffd = -1;
	l->base[0] = l->sname[0] = l->parent[0] = '\0';
	l->nlink_counts = false;
	l->held_dev = 0;
	l->held_ino = 0;
	l->ring = l->rang = false;
	l->flag = l->flag_failed = false;
	l->look_later = l->look_first = false;
	if (!path || !*path)
		return -EINVAL;
	l->stale_ms = stale_ms > 0 ? stale_ms : HF_LOCK_STALE_MS_DEFAULT;
	l->max_hold_ms = max_hold_ms > 0 ? max_hold_ms : HF_LOCK_MAX_HOLD_MS_DEFAULT;
	int rc = hf_open_split(path, &l->pfd, l->parent, sizeof l->parent, l->base,
			       sizeof l->base);
	if (rc < 0)
		return rc;
	if (name_reserved(l->base) ||
	    strlen(l->base) + strlen(STATE_SUFFIX) > NAME_MAX) {
		rc = -EINVAL;
		goto fail;
	}
	*hf_put_str(hf_put_str(l->sname, l->base), STATE_SUFFIX) = '\0';

	for (int tries = 0;; tries++) {
		l->sfd = hf_sys_openat(l->pfd, l->sname, OPEN_DIR, 0);
		if (l->sfd != -ENOENT || tries == 2)
			break;
		rc = state_make(l);
		if (rc < 0 && rc != -EEXIST)
			goto fail;
	}
	if (l->sfd < 0) {
		rc = l->sfd == -ENOTDIR || l->sfd == -ELOOP ? HF_EUNSAFE : l->sfd;
		l->sfd = -1;
		goto fail;
	}
	struct stat st;
	rc = hf_sys_fstat(l->sfd, &st);
	if (rc < 0)
		goto fail;
	if (st.st_uid != geteuid() || (st.st_mode & 022)) {
		rc = HF_EUNSAFE; /* another user's, or writable by others */
		goto fail;
	}
	struct statfs sf;
	rc = hf_sys_fstatfs(l->sfd, &sf);
	if (rc < 0)
		goto fail;
	l->nlink_counts = sf.f_type == TMPFS_MAGIC || sf.f_type == EXT4_SUPER_MAGIC ||
			  sf.f_type == XFS_SUPER_MAGIC; /* DL8 */
	return 0;
fail:
	lk_close(l);
	return rc;
}

/* --- claims ------------------------------------------------------------------ */

/* The mode of an entry's name (r-/s-<20 digits>-<token>), or -1. */
static int entry_mode(const char *name)
{
	int mode = !strncmp(name, SHARED_PREFIX, 2) ? HF_MODE_SHARED
		   : !strncmp(name, SLOTS_PREFIX, 2) ? HF_MODE_SLOTS
						     : -1;
	if (mode < 0 || strlen(name) != ENTRY_NAME_MAX - 1 || name[22] != '-' ||
	    strspn(name + 2, "0123456789") != 20)
		return -1;
	return mode;
}


/* "c-<ms>-" or, for a claim its owner makes of its own record (release,
 * withdrawal), "c-<ms>-<token>-": the owner declares it has left (or never
 * entered) its critical section. */
static void claim_prefix(char *buf, size_t n, const char *self_token)
{
	(void)n; /* 40 + HF_TOKEN_LEN: "c-" 13+ digits "-" token "-" */
	char *p = hf_put_str(buf, CLAIM_PREFIX);
	p = hf_put_u64w(p, (uint64_t)hf_sys_now_ms(), 13);
	*p++ = '-';
	if (self_token) {
		p = hf_put_str(p, self_token);
		*p++ = '-';
	}
	*p = '\0';
}

/* The time in a name "<prefix><ms>-…", or -1 when it is not such a name. */
static int64_t name_time(const char *name, const char *prefix)
{
	if (strncmp(name, prefix, strlen(prefix)) != 0)
		return -1;
	const char *p = name + strlen(prefix);
	char *end;
	long long v = strtoll(p, &end, 10);
	return end != p && *end == '-' && v >= 0 ? (int64_t)v : -1;
}

/* The time in a claim's name, or -1 when it is not a claim's name. */
static int64_t claim_time(const char *name)
{
	return name_time(name, CLAIM_PREFIX);
}

/* Does the claim's name declare token as its owner's own (a self-claim)? */
static bool claim_declares(const char *name, const char *token)
{
	const char *p = strchr(name + strlen(CLAIM_PREFIX), '-');
	size_t n = strlen(token);
	return p && !strncmp(p + 1, token, n) && p[1 + n] == '-';
}

/* The named points of a destructive step, by role (no formatting on the
 * hot path: the names are fixed). */
struct role {
	enum hf_point judged, taken, verified, unlinked;
};
#define ROLE(r) \
	(&(const struct role){ HF_PT_DIRLOCK_##r##_JUDGED, HF_PT_DIRLOCK_##r##_TAKEN, \
			       HF_PT_DIRLOCK_##r##_VERIFIED, HF_PT_DIRLOCK_##r##_UNLINKED })

/* Take dirfd/name into a new claim of our own: 0 and mine, -ENOENT. */
static int claim_take(struct lk *l, int dirfd, const char *name, const char *self_token,
		      char *mine, size_t n)
{
	char prefix[40 + HF_TOKEN_LEN];
	claim_prefix(prefix, sizeof prefix, self_token);
	return hf_claim_take(dirfd, name, l->sfd, prefix, mine, n);
}

static int rm_files_cb(int dirfd, const char *name, void *ctx)
{
	(void)ctx;
	if (strcmp(name, "owner") == 0)
		return 0;
	int rc = hf_sys_unlinkat(dirfd, name, 0);
	return rc == -EISDIR || rc == -EPERM || rc == -ENOENT ? 0 : rc < 0 ? rc : 0;
}

/* Remove our own verified claim: the record, then the directory (DL3). 1
 * removed; 0 when it stays: a record appeared in it meanwhile (an acquirer
 * publishing through the descriptor it opened while the directory was at L,
 * DL1: it cannot enter, its directory is not at L, and it unlinks its record
 * through that descriptor when it withdraws, DL10); <0 on errors. Any other
 * file in it (holdfast puts none there) is removed; never a subdirectory
 * (never recursive). */
static int claim_remove(struct lk *l, const char *mine, const struct role *role)
{
	assert(claim_time(mine) >= 0 && "DL3"); /* our own claim, never L */
	char p[HF_CLAIM_NAME_MAX + 16];
	*hf_put_str(hf_put_str(p, mine), "/owner") = '\0';
	int rc = hf_sys_unlinkat(l->sfd, p, 0);
	if (rc < 0 && rc != -ENOENT)
		return rc;
	hf_sys_point(role->unlinked);
	rc = hf_sys_unlinkat(l->sfd, mine, AT_REMOVEDIR);
	if (rc == -ENOTEMPTY || rc == -EEXIST) {
		int cfd = hf_sys_openat(l->sfd, mine, OPEN_DIR, 0);
		if (cfd < 0)
			return cfd == -ENOENT ? 0 : cfd;
		struct stat st;
		rc = hf_sys_fstatat(cfd, "owner", &st, AT_SYMLINK_NOFOLLOW);
		if (rc == -ENOENT)
			rc = hf_dir_each(cfd, "", rm_files_cb, NULL);
		else if (rc == 0)
			rc = 1; /* a record appeared: the claim stays */
		hf_sys_close(cfd);
		if (rc != 0)
			return rc > 0 ? 0 : rc;
		rc = hf_sys_unlinkat(l->sfd, mine, AT_REMOVEDIR);
	}
	if (rc == -ENOENT)
		return 0; /* stolen from us after the record went (DL5) */
	return rc < 0 ? rc : 1;
}

static int subdir_cb(int dirfd, const char *name, void *ctx)
{
	(void)ctx;
	struct stat st;
	int rc = hf_sys_fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW);
	if (rc == -ENOENT)
		return 0;
	return rc < 0 ? rc : S_ISDIR(st.st_mode) ? 1 : 0;
}

/* 1 when our claim holds a subdirectory (DL19), 0 when not, <0 on errors. */
static int claim_has_subdir(struct lk *l, const char *mine)
{
	int cfd = hf_sys_openat(l->sfd, mine, OPEN_DIR, 0);
	if (cfd < 0)
		return cfd == -ENOENT ? 0 : cfd;
	int rc = hf_dir_each(cfd, "", subdir_cb, NULL);
	hf_sys_close(cfd);
	return rc;
}

/* Put our own claim back at L, or leave it as a barrier (DL4). */
static int claim_putback(struct lk *l, const char *mine, const struct place *found)
{
	assert(claim_time(mine) >= 0 && found->kind != REC_NONE && "DL4");
	const char *expect = found->kind == REC_OK ? found->info.owner.token : NULL;
	int rc = hf_claim_restore(l->sfd, mine, l->pfd, l->base, expect, dir_identify, NULL);
	return rc == HF_EBARRIER || rc == HF_ELOST || rc == -ENOENT ? 0 : rc;
}

/* Take the place judged (L or another's claim) into our own claim, verify
 * it, remove it. Mismatch: L's goes back (or stays a barrier); another's
 * claim stays under our name (still a claim, judged again later). 1 when
 * removed, 0 when not (gone, or not what was judged), <0 on errors. */
static int take_verify_remove(struct lk *l, int dirfd, const char *name,
			      const struct place *judged, const char *self_token,
			      const struct role *role)
{
	char mine[HF_CLAIM_NAME_MAX];
	hf_sys_point(role->judged);
	int rc = claim_take(l, dirfd, name, self_token, mine, sizeof mine);
	if (rc == -ENOENT)
		return 0; /* someone else moved it first */
	if (rc < 0)
		return rc;
	if (dirfd == l->pfd) /* the only name taken from P is L */
		l->ring = true; /* DQ2: a reap, a withdrawal, a release by token */
	hf_sys_point(role->taken);
	struct place now;
	rc = place_peek(l->sfd, mine, &now);
	if (rc < 0)
		return rc; /* our claim stays: a barrier, swept when stale */
	place_done(&now);
	hf_sys_point(role->verified);
	if (now.kind != REC_NONE && same_as_judged(judged, &now)) {
		/* DL19: holdfast never makes a subdirectory in a lock directory
		 * and never removes one: a directory with one is not ours to
		 * reap. L's goes back to L as it was (HF_EFOREIGN_DIR: refused,
		 * naming it); another's claim stays where it is. */
		int sub = claim_has_subdir(l, mine);
		if (sub != 0) {
			if (sub < 0)
				return sub;
			if (dirfd != l->pfd)
				return 0;
			rc = claim_putback(l, mine, &now);
			return rc < 0 ? rc : HF_EFOREIGN_DIR;
		}
		return claim_remove(l, mine, role);
	}
	if (now.kind == REC_NONE)
		return 0; /* stolen from us meanwhile (DL5) */
	if (dirfd == l->pfd)
		return claim_putback(l, mine, &now); /* DL4 */
	/* DS5: an entry renewed since it was judged stays in our claim: a
	 * barrier while its record lives, its holder's renewal answers lost
	 * (not at its name), its release finds it here (DT). Never put back:
	 * its name is always free, so a put-back could not be refused as one
	 * at L is when L changed hands meanwhile. */
	return 0;
}

struct claim_list {
	int n;
	char names[MAX_CLAIMS][HF_CLAIM_NAME_MAX];
};

static int list_cb(int dirfd, const char *name, void *ctx)
{
	(void)dirfd;
	struct claim_list *cl = ctx;
	if (claim_time(name) < 0)
		return 0; /* not a claim */
	if (cl->n == MAX_CLAIMS)
		return 1;
	snprintf(cl->names[cl->n++], HF_CLAIM_NAME_MAX, "%s", name);
	return 0;
}

/* The claims beside the lock, at most MAX_CLAIMS (a sweep or a search
 * handles the rest in a later pass): none at all in one fstat when the link
 * count says there is no subdirectory (DL8), else readdir. */
static int claims_list(struct lk *l, struct claim_list *cl)
{
	cl->n = 0;
	struct stat st;
	int rc = hf_sys_fstat(l->sfd, &st);
	if (rc < 0)
		return rc;
	if (l->nlink_counts && st.st_nlink == 2)
		return 0;
	rc = hf_claim_scan(l->sfd, CLAIM_PREFIX, list_cb, cl);
	return rc < 0 ? rc : 0;
}

/* How a claim stands for an acquirer's look (DL2b). */
enum { CLAIM_GONE, CLAIM_HARMLESS, CLAIM_STALE, CLAIM_BARRIER };

/* A claim can hide a holder in its critical section only if it holds a
 * complete record whose owner is live and did not declare the claim its own
 * (a holder's record stays in its directory all through its critical
 * section, and an owner claims its own record only after leaving it or
 * instead of entering). Unreadable records count as barriers until the
 * claim is older than the stale window by its name. *p is filled (place_done
 * it when the result is >= 0). */
static int claim_judge(struct lk *l, const char *name, struct place *p, int64_t now)
{
	if (place_read(l->sfd, name, p) < 0)
		return -1;
	if (p->kind == REC_NONE)
		return CLAIM_GONE;
	judge(l, p, claim_time(name), now);
	p->info.in_claim = 1;
	if (p->kind == REC_BAD)
		return p->info.state == HF_LOCK_ABANDONED ? CLAIM_STALE : CLAIM_BARRIER;
	if (p->kind == REC_EMPTY)
		return p->info.state == HF_LOCK_ABANDONED ? CLAIM_STALE : CLAIM_HARMLESS;
	if (reapable(p->info.state))
		return CLAIM_STALE;
	if (claim_declares(name, p->info.owner.token))
		/* a release in flight; left behind when older than the stale window */
		return now - claim_time(name) > l->stale_ms ? CLAIM_STALE : CLAIM_HARMLESS;
	return CLAIM_BARRIER;
}

struct look {
	struct lk *l;
	struct hf_lock_info *barrier;
	int stale;
	int entries;                    /* r- and s- entries seen (DS1)       */
	int64_t now;
};


static int look_cb(int dirfd, const char *name, void *ctx)
{
	(void)dirfd;
	struct look *k = ctx;
	int64_t born = name_time(name, NEW_PREFIX);
	if (born >= 0) {
		/* another acquirer's new directory (DA0): no record, never a
		 * barrier; one left by a crash is swept by the holder */
		if (k->now - born > k->l->stale_ms)
			k->stale++;
		return 0;
	}
	if (claim_time(name) < 0) {
		if (entry_mode(name) >= 0)
			k->entries++; /* judged by the drain (DS1) */
		return 0; /* not a claim */
	}
	struct place p;
	int v = claim_judge(k->l, name, &p, k->now);
	if (v < 0)
		return -EIO; /* CL4: a claim we could not read denies */
	place_done(&p);
	if (v == CLAIM_BARRIER) {
		if (k->barrier)
			*k->barrier = p.info;
		return HF_EBARRIER;
	}
	if (v == CLAIM_STALE)
		k->stale++;
	return 0;
}

/* DA5: may we enter as far as claims go? 0 yes, HF_EBARRIER (a live owner's
 * claim; *barrier filled), <0 error (denies, CL4). Every claim is judged
 * as the directory is read (no limit); *stale counts claims to sweep. */
static int claims_check(struct lk *l, struct hf_lock_info *barrier, int *stale, int *entries)
{
	*stale = *entries = 0;
	struct stat st;
	int rc = hf_sys_fstat(l->sfd, &st);
	if (rc < 0)
		return rc;
	if (l->nlink_counts && st.st_nlink == 2)
		return 0; /* DL8 */
	struct look k = { .l = l, .barrier = barrier, .now = hf_sys_now_ms() };
	rc = hf_dir_each(l->sfd, "", look_cb, &k); /* claims and new directories */
	*stale = k.stale;
	*entries = k.entries;
	return rc;
}

/* A new directory (DA0) left by a crashed acquirer: past the stale window by
 * its name and its kernel lock free (DL9). Removed by its unique name while
 * we hold that lock exclusively: its maker never published into it. */
struct sweep_new {
	const struct lk *l;
	int removed;
};

static int sweep_new_cb(int dirfd, const char *name, void *ctx)
{
	struct sweep_new *sn = ctx;
	int64_t born = name_time(name, NEW_PREFIX);
	if (born < 0 || hf_sys_now_ms() - born <= sn->l->stale_ms)
		return 0;
	int fd = hf_sys_openat(dirfd, name, OPEN_DIR, 0);
	if (fd < 0)
		return 0;
	if (hf_kernel_lock_probe(fd) == 0 && hf_sys_unlinkat(dirfd, name, AT_REMOVEDIR) == 0)
		sn->removed++;
	hf_sys_close(fd);
	return 0;
}

/* Sweep: remove every stale claim (DL5, DL6): steal it into our own claim,
 * verify it is what was judged, remove it; and crashed acquirers' new
 * directories. Returns the number removed. */
static int sweep(struct lk *l)
{
	struct sweep_new news = { .l = l };
	hf_dir_each(l->sfd, NEW_PREFIX, sweep_new_cb, &news);
	struct claim_list *cl = malloc(sizeof *cl);
	if (!cl)
		return -ENOMEM;
	int rc = claims_list(l, cl), removed = 0;
	int64_t now = hf_sys_now_ms();
	for (int i = 0; rc >= 0 && i < cl->n; i++) {
		struct place p;
		int v = claim_judge(l, cl->names[i], &p, now);
		if (v != CLAIM_STALE) {
			if (v >= 0)
				place_done(&p);
			continue;
		}
		/* p stays open: it pins a record-less claim's inode (CL1) and holds
		 * the kernel lock the verdict took (DL9) until it is removed */
		rc = take_verify_remove(l, l->sfd, cl->names[i], &p, NULL, ROLE(SWEEP));
		place_done(&p);
		if (rc > 0)
			removed++;
	}
	free(cl);
	return rc < 0 ? rc : removed + news.removed;
}

/* Find our own record in a claim; steal it into our own claim, verify,
 * remove (DL5). 1 found and removed, 0 not found, <0 error; *ret_claims (may
 * be NULL): how many claims there were to look at. */
static int find_own(struct lk *l, const char *token, int *ret_claims)
{
	struct claim_list *cl = malloc(sizeof *cl);
	if (!cl)
		return -ENOMEM;
	int rc = claims_list(l, cl), found = 0;
	if (ret_claims)
		*ret_claims = cl->n;
	for (int i = 0; rc >= 0 && i < cl->n && !found; i++) {
		struct place p;
		rc = place_peek(l->sfd, cl->names[i], &p);
		if (rc < 0)
			continue;
		place_done(&p);
		if (p.kind != REC_OK || strcmp(p.info.owner.token, token) != 0)
			continue;
		rc = take_verify_remove(l, l->sfd, cl->names[i], &p, token, ROLE(FIND));
		found = rc > 0;
	}
	free(cl);
	return rc < 0 ? rc : found;
}

/* Is L's record the token's? 1 yes (and *p holds it, closed), 0 no, <0. */
static int at_l_is(struct lk *l, const char *token, struct place *p)
{
	int rc = place_peek(l->pfd, l->base, p);
	if (rc < 0)
		return rc;
	place_done(p);
	return p->kind == REC_OK && !strcmp(p->info.owner.token, token);
}

/* Release by token (DT), for a process that holds no descriptor of the lock:
 * at L through our own claim, or in a claim; found nowhere, at L once more
 * (a reaper that took it by mistake has put it back meanwhile), and while
 * claims exist a few passes more: a record moved between L and the claims
 * as we look can be missed by one pass (model: rel-leftover). 1 removed, 0
 * not found, <0 error. */
static int withdraw(struct lk *l, const char *token, const struct role *role)
{
	struct place p;
	for (int pass = 0; pass < 4; pass++) {
		int rc = at_l_is(l, token, &p);
		if (rc < 0)
			return rc;
		if (rc == 1 && (rc = take_verify_remove(l, l->pfd, l->base, &p, token, role)) != 0)
			return rc;
		int claims = 0;
		if ((rc = find_own(l, token, &claims)) != 0)
			return rc;
		if ((rc = at_l_is(l, token, &p)) < 0)
			return rc;
		if (rc == 1 && (rc = take_verify_remove(l, l->pfd, l->base, &p, token, role)) != 0)
			return rc;
		if (claims == 0)
			break; /* no claim to hide it: it is nowhere */
	}
	return 0;
}

/* DW: the acquirer's own withdrawal, through the descriptor lfd of the
 * directory it opened at DA2 (wherever it is now). token: its record's, or
 * NULL when it published none. The caller closes lfd after (DW3). */
static void withdraw_own(struct lk *l, int lfd, const char *token)
{
	if (token) {
		/* DW1, DL10: the record in our directory, if it is ours. Only this
		 * attempt ever publishes our token, and only into this directory
		 * (DL1): unlinking it here leaves no record of ours anywhere, and
		 * it is safe as two steps (read, then unlink) - once ours is gone
		 * nobody else publishes into a directory only we made and hold
		 * (model/dirlock.pml, W1ATOMIC=0). */
		char buf[OWNER_MAX + 2];
		struct hf_lock_info i;
		ssize_t n = read_small(lfd, "owner", buf);
		if (n >= 0 && token_peek(buf, (size_t)n, &i) &&
		    !strcmp(i.owner.token, token))
			hf_sys_unlinkat(lfd, "owner", 0);
		hf_sys_point(HF_PT_DIRLOCK_WITHDRAW_UNLINKED);
	}
	/* DW2: if our directory is at L, it goes through our own claim; if it
	 * is in another's claim, that claim's owner deals with it (record-less
	 * once we close lfd: harmless, and reapable at once, DL9). */
	struct stat mine, at;
	if (hf_sys_fstat(lfd, &mine) < 0 ||
	    hf_sys_fstatat(l->pfd, l->base, &at, AT_SYMLINK_NOFOLLOW) < 0 ||
	    mine.st_dev != at.st_dev || mine.st_ino != at.st_ino)
		return;
	struct place judged = { .kind = REC_EMPTY, .dev = mine.st_dev, .ino = mine.st_ino,
				.fd = lfd };
	take_verify_remove(l, l->pfd, l->base, &judged, token, ROLE(WITHDRAW));
}
/* --- acquire ------------------------------------------------------------------ */

static void holder_from(struct hf_lock_info *h, const struct place *p)
{
	if (h) {
		*h = p->info;
		h->live_fd = -1;
	}
}

/* DJ1: L exists. RETRY after a reap (or when L vanished), else the conflict
 * with *holder filled. */
static int judge_and_reap(struct lk *l, struct hf_lock_info *holder)
{
	struct place p;
	int rc = place_read(l->pfd, l->base, &p);
	if (rc < 0)
		return rc;
	if (p.kind == REC_NONE)
		return RETRY;
	judge(l, &p, p.ctime_ms, hf_sys_now_ms());
	hf_sys_point(HF_PT_DIRLOCK_ACQUIRE_JUDGED);
	if (!reapable(p.info.state)) {
		/* DQ5: a waiter marks the live holder's directory, through the
		 * descriptor that pins it, so that its release rings - once: a
		 * marked one is left as it is (the mark moves the directory's
		 * ctime, by which a record-less one ages, DL6) */
		if (l->flag && p.kind != REC_BAD && p.fd >= 0 && p.ino) {
			if ((p.mode & S_ISVTX) || hf_sys_fchmod(p.fd, S_ISVTX | 0700) == 0) {
				l->held_dev = p.dev; /* DQ1: the look after it */
				l->held_ino = p.ino;
			} else {
				l->flag_failed = true;
			}
		}
		place_done(&p);
		holder_from(holder, &p);
		if (p.kind == REC_BAD && holder)
			snprintf(holder->reason, sizeof holder->reason,
				 "the owner record is unreadable (not a record holdfast writes); "
				 "refused until it is past the stale window");
		return p.kind == REC_BAD ? HF_EUNREADABLE : HF_EHELD;
	}
	/* A verdict is about the directory read (its descriptor pins it), and
	 * by now it may have left L: released, its kernel lock then free and
	 * its owner's process collected. Reap only what is still at L: a later
	 * directory there is another's, and taking it would only make the
	 * claim core put it back - or leave a barrier that denies everyone
	 * until its owner releases from it. The claim core's check remains the
	 * proof (CL1); this spares the live. */
	struct stat at;
	if (hf_sys_fstatat(l->pfd, l->base, &at, AT_SYMLINK_NOFOLLOW) < 0 ||
	    at.st_dev != p.dev || at.st_ino != p.ino) {
		place_done(&p);
		return RETRY;
	}
	/* p stays open across the reap: it pins a record-less directory's inode
	 * (CL1) and holds the kernel lock the verdict took (DL9) */
	assert(p.fd >= 0 && (p.kind == REC_OK || p.info.partial) && "DL9");
	rc = take_verify_remove(l, l->pfd, l->base, &p, NULL, ROLE(REAP));
	place_done(&p);
	if (rc == HF_EFOREIGN_DIR) {
		holder_from(holder, &p);
		if (holder)
			snprintf(holder->reason, sizeof holder->reason,
				 "the lock directory holds a subdirectory, which holdfast never "
				 "makes nor removes: remove it by hand");
		return DIR_FOREIGN; /* DL19 */
	}
	return rc < 0 ? rc : RETRY;
}

/* DA0 could not write (a read-only file system, no space, no permission):
 * when a live owner holds L, the answer is that it is held, naming it (as
 * anywhere else), not the write that could not happen; a reapable or absent
 * L keeps the write's error (nobody could reap or enter here). */
static int held_over_write_error(struct lk *l, int werr, struct hf_lock_info *holder)
{
	if (werr != -EROFS && werr != -ENOSPC && werr != -EDQUOT && werr != -EACCES &&
	    werr != -EPERM)
		return werr;
	struct place p;
	if (place_read(l->pfd, l->base, &p) < 0)
		return werr;
	if (p.kind == REC_NONE)
		return werr;
	judge(l, &p, p.ctime_ms, hf_sys_now_ms());
	int held = p.kind == REC_OK && !reapable(p.info.state);
	place_done(&p);
	if (held)
		holder_from(holder, &p);
	return held ? HF_EHELD : werr;
}

/* DA0: our new directory in the state directory, locked (DL9), kept across
 * attempts until it is renamed to L. */
struct stage {
	int fd;                         /* -1: none made yet                 */
	char name[48];                  /* n-<ms>-<16 hex>                   */
};

static int stage_make(struct lk *l, struct stage *st)
{
	for (int tries = 0; tries < 4; tries++) {
		char hex[17];
		int rc = hf_random_hex(hex, 8);
		if (rc < 0)
			return rc;
		char *np = hf_put_str(st->name, NEW_PREFIX);
		np = hf_put_u64w(np, (uint64_t)hf_sys_now_ms(), 13);
		*np++ = '-';
		*hf_put_str(np, hex) = '\0';
		rc = hf_sys_mkdirat(l->sfd, st->name, 0700);
		if (rc == -EEXIST)
			continue; /* 64 random bits collided */
		if (rc < 0)
			return rc;
		hf_sys_point(HF_PT_DIRLOCK_ACQUIRE_STAGED);
		int fd = hf_sys_openat(l->sfd, st->name, OPEN_DIR, 0);
		if (fd < 0)
			return fd == -ENOENT ? RETRY : fd; /* swept already */
		rc = hf_sys_flock(fd, LOCK_SH | LOCK_NB); /* DL9 */
		if (rc < 0) {
			hf_sys_close(fd);
			if (rc == -EWOULDBLOCK)
				return RETRY; /* a sweeper is removing it */
			return rc == -EINVAL || rc == -ENOLCK ? -EOPNOTSUPP : rc;
		}
		st->fd = fd;
		return 0;
	}
	return -EEXIST;
}

/* Drop a directory that never went to L: ours by its unique name while we
 * hold its kernel lock (no sweeper removes a locked one). */
static void stage_drop(struct lk *l, struct stage *st)
{
	if (st->fd < 0)
		return;
	hf_sys_unlinkat(l->sfd, st->name, AT_REMOVEDIR);
	hf_sys_close(st->fd);
	st->fd = -1;
}

/* DL13: is the live holder the very process the lock is wanted for on
 * behalf of (the same pid of this pid namespace on this boot, with the same
 * start time)? That process is not the waiter, so waiting would last as
 * long as it lives: a self-deadlock. A caller waiting for itself may be one
 * thread waiting for another's release, and waits. */
static bool waits_for_itself(const struct hf_lock_opts *o, const struct hf_lock_info *h)
{
	pid_t pid = o->pid;
	if (pid <= 0 || pid == hf_sys_getpid())
		return false;
	if (h->partial || !h->owner.token[0] || h->owner.pid != pid || !h->owner.pid_start)
		return false;
	if (strcmp(h->owner.boot_id, hf_boot_id()) || h->owner.pidns != hf_self_pidns())
		return false;
	uint64_t start;
	return hf_pid_start(pid, &start) == 0 && start == h->owner.pid_start;
}

/* --- modes: the drain (DS1), the entry (DS2), its withdrawal ------------------ */

/* An entry's name: r-/s-<fence, 20 digits>-<token>. */
static void entry_name(char *buf, int mode, uint64_t fence, const char *token)
{
	char *p = hf_put_str(buf, mode == HF_MODE_SLOTS ? SLOTS_PREFIX : SHARED_PREFIX);
	p = hf_put_u64w(p, fence, 20);
	*p++ = '-';
	*hf_put_str(p, token) = '\0';
}

#define DRAIN_REAP_MAX 8 /* dead entries reaped per read (more: the next read) */

/* One read of the state directory for DS1. */
struct drain {
	struct lk *l;
	const struct hf_lock_opts *o;
	int64_t now;
	int live;                       /* live holders we cannot share with  */
	int slots;                      /* live slot holders (slots mode)     */
	bool named;                     /* holder filled                      */
	struct hf_lock_info *holder;    /* one of them, to name               */
	int ndead;
	char dead[DRAIN_REAP_MAX][ENTRY_NAME_MAX];
	const char *self;               /* our token (DL20)                   */
};

static int drain_cb(int dirfd, const char *name, void *ctx)
{
	struct drain *d = ctx;
	int mode = entry_mode(name);
	if (mode < 0) {
		if (claim_time(name) < 0)
			return 0; /* n-, .gitignore, the counter */
		/* a claim that may hide a live holder denies, as at DA5 */
		struct place p;
		int v = claim_judge(d->l, name, &p, d->now);
		if (v < 0)
			return -EIO; /* CL4 */
		place_done(&p);
		if (v == CLAIM_BARRIER) {
			if (d->holder)
				*d->holder = p.info;
			/* DL20: our own directory, taken from L by mistake */
			return strcmp(p.info.owner.token, d->self) ? HF_EBARRIER : RETRY;
		}
		return 0;
	}
	bool counted = d->o->mode == HF_MODE_SLOTS && mode == HF_MODE_SLOTS;
	if (d->o->mode == HF_MODE_SHARED && mode == HF_MODE_SHARED)
		return 0; /* shared beside shared: not even read */
	struct place p;
	if (place_read(dirfd, name, &p) < 0)
		return -EIO; /* an entry we cannot read denies (CL4's rule) */
	if (p.kind == REC_NONE)
		return 0; /* released meanwhile */
	judge(d->l, &p, p.ctime_ms, d->now);
	place_done(&p);
	/* SM1: an entry holds its maker's record, in the mode its name says;
	 * anything else there is no holder to share with */
	if (p.kind == REC_OK && p.info.mode != mode)
		counted = false;
	if (reapable(p.info.state)) {
		if (d->ndead < DRAIN_REAP_MAX)
			snprintf(d->dead[d->ndead++], ENTRY_NAME_MAX, "%s", name);
		return 0;
	}
	if (counted)
		d->slots++;
	else
		d->live++;
	if (d->holder && (!d->named || !counted)) {
		holder_from(d->holder, &p);
		d->named = true;
	}
	return 0;
}

/* DS5: reap an entry judged dead, leaked, expired or abandoned - judged
 * again here, its descriptor open across the take (CL1, DL9). */
static bool drain_reap(struct lk *l, const char *name)
{
	struct place p;
	if (place_read(l->sfd, name, &p) < 0)
		return false;
	if (p.kind == REC_NONE)
		return true; /* gone meanwhile */
	judge(l, &p, p.ctime_ms, hf_sys_now_ms());
	int rc = reapable(p.info.state) ? take_verify_remove(l, l->sfd, name, &p, NULL, ROLE(REAP))
					: 1; /* SM5 */
	place_done(&p);
	return rc > 0;
}

/* Is our directory (lfd) still at L? */
static bool at_l(struct lk *l, int lfd)
{
	struct stat mine, at;
	return hf_sys_fstat(lfd, &mine) == 0 &&
	       hf_sys_fstatat(l->pfd, l->base, &at, AT_SYMLINK_NOFOLLOW) == 0 &&
	       mine.st_dev == at.st_dev && mine.st_ino == at.st_ino;
}

/* An acquisition standing at L (DS1): its record there, and when it was
 * last written. */
struct stand {
	struct hf_owner *me;
	uint64_t fence;
	int64_t hold;                   /* its max-hold, as recorded          */
	int mode, slots;
	char *rec;                      /* the record at L (OWNER_MAX bytes)  */
	size_t *reclen;
	int64_t written_ms;             /* hf_sys_now_ms() at its last write  */
	int64_t window;                 /* a judge finds it leaked or expired
					   no sooner than this after a write:
					   its lease, else its max-hold       */
};

/* DS6: rewrite our record at L with its time now, as DR3-DR5 renew it:
 * through our descriptor, then read back at L. 0; RETRY when our directory
 * is no longer at L with it (a reaper took it meanwhile: the caller
 * withdraws, DL10); <0. */
static int stand_renew(struct lk *l, int lfd, struct stand *sd)
{
	hf_owner_restart(sd->me);
	char rec[OWNER_MAX];
	size_t n = hf_dirlock_record_format(rec, sd->me, sd->fence, sd->hold, sd->mode, sd->slots);
	int rc = hf_replace_file_at(lfd, "owner", rec, n, 0600, false);
	if (rc < 0)
		return rc == -ENOENT ? RETRY : rc;
	memcpy(sd->rec, rec, n);
	*sd->reclen = n;
	sd->written_ms = hf_sys_now_ms();
	char opath[NAME_MAX + 8], back[OWNER_MAX + 2];
	*hf_put_str(hf_put_str(opath, l->base), "/owner") = '\0';
	ssize_t bl = read_small(l->pfd, opath, back);
	if (bl < 0)
		return bl == -ENOENT || bl == -ENOTDIR || bl == -EFBIG ? RETRY : (int)bl;
	return (size_t)bl == n && !memcmp(back, rec, n) ? 0 : RETRY; /* DL14 */
}

/* DS1: wait, standing at L, until no holder we cannot share with is left.
 * 0: none; HF_EHELD (try once), HF_ETIMEDOUT, HF_ECANCELED, -EDEADLK with
 * *holder named; HF_EBARRIER; RETRY (our directory left L meanwhile); <0. */
static int share_drain(struct lk *l, const struct hf_lock_opts *o, const struct hf_waiter *outer,
		       int lfd, struct stand *sd, struct hf_lock_info *holder)
{
	struct hf_waiter w;
	bool waiting = false;
	int rc;
	for (;;) {
		/* DS6: a record that waited is written again before every read,
		 * every half of the window in which it cannot be leaked, so it is
		 * never leaked while we stand here (SM4) - and, the drain over, it
		 * is fresh when we enter (SM7) */
		if (waiting && !at_l(l, lfd)) {
			rc = RETRY; /* DS5: only one standing at L reads and reaps */
			break;
		}
		if (waiting && hf_sys_now_ms() - sd->written_ms > sd->window / 2 &&
		    (rc = stand_renew(l, lfd, sd)) != 0)
			break;
		struct drain d = { .l = l, .o = o, .now = hf_sys_now_ms(), .holder = holder,
				   .self = sd->me->token };
		rc = hf_dir_each(l->sfd, "", drain_cb, &d);
		if (rc < 0 || rc == RETRY)
			break;
		int reaped = 0;
		for (int i = 0; i < d.ndead; i++)
			reaped += drain_reap(l, d.dead[i]);
		if (reaped > 0)
			continue; /* and read again: a decision is made on a read
				   * during which none of ours was in our claim */
		d.live += d.ndead; /* could not be reaped (an error): wait for them */
		if (d.live == 0 && (o->mode != HF_MODE_SLOTS || d.slots < o->slots)) {
			/* SM7: one that waited enters with its record written now */
			rc = waiting ? stand_renew(l, lfd, sd) : 0;
			break;
		}
		if (o->wait_ms == 0) {
			rc = HF_EHELD;
			break;
		}
		if ((o->wait_ms < 0 && waits_for_itself(o, holder)) ||
		    hf_lock_self_wait(holder, o->wait_ms, l->stale_ms)) {
			rc = -EDEADLK; /* DL13, HL5: it would wait for itself */
			break;
		}
		if (!at_l(l, lfd)) {
			rc = RETRY; /* moved into a claim meanwhile: start again */
			break;
		}
		if (!waiting) {
			char dir[PATH_MAX];
			if (snprintf(dir, sizeof dir, "%s/%s", l->parent, l->sname) >= (int)sizeof dir) {
				rc = -ENAMETOOLONG;
				break;
			}
			hf_wait_init(&w, dir, "", o->wait_ms);
			w.deadline_ns = outer->deadline_ns; /* the acquisition's deadline */
			if (o->has_cancel)
				hf_wait_set_cancel(&w, o->cancel_fd);
			waiting = true;
		}
		hf_wait_holder(&w, hf_owner_local_pid(&holder->owner));
		hf_sys_point(HF_PT_DIRLOCK_SHARE_DRAINING);
		rc = hf_wait_next(&w);
		if (rc < 0)
			break; /* HF_ETIMEDOUT, HF_ECANCELED, -errno */
		holder->reason[0] = '\0';
	}
	if (waiting)
		hf_wait_done(&w);
	return rc;
}

/* DS2: our directory leaves L for its entry, through our self-claim. 0 and
 * entry named; RETRY (it is no longer at L, or no longer ours); <0. */
static int share_move(struct lk *l, int lfd, const char *token, int mode, uint64_t f,
		      char *entry)
{
	/* No look at L first: DA6 read our record back there (DL1: only in our
	 * directory), and after a wait the verify below is the proof */
	struct stat mine, at;
	if (hf_sys_fstat(lfd, &mine) < 0)
		return RETRY;
	char claim[HF_CLAIM_NAME_MAX];
	int rc = claim_take(l, l->pfd, l->base, token, claim, sizeof claim);
	if (rc == -ENOENT)
		return RETRY;
	if (rc < 0)
		return rc;
	rc = hf_sys_fstatat(l->sfd, claim, &at, AT_SYMLINK_NOFOLLOW);
	if (rc == -ENOENT)
		return RETRY; /* stolen meanwhile (DL5): it is a claim's now */
	if (rc < 0)
		return rc;
	if (at.st_mode & S_ISVTX)
		l->ring = true; /* DQ5: a waiter marked it before its sleep */
	if (at.st_dev != mine.st_dev || at.st_ino != mine.st_ino) {
		/* L changed hands between the look and the take: not ours, back
		 * it goes (DL4) */
		struct place now;
		if (place_peek(l->sfd, claim, &now) == 0) {
			place_done(&now);
			if (now.kind != REC_NONE)
				claim_putback(l, claim, &now);
		}
		return RETRY;
	}
	/* Verified ours in our self-claim, whose unique name nobody else
	 * makes (CL5): the rename moves our directory, no other */
	entry_name(entry, mode, f, token);
	rc = hf_sys_renameat2(l->sfd, claim, l->sfd, entry, RENAME_NOREPLACE);
	if (rc < 0)
		return rc == -ENOENT ? RETRY : rc; /* a self-claim of ours stays: swept when stale */
	assert(entry_mode(entry) == mode && "SM1");
	hf_sys_point(HF_PT_DIRLOCK_SHARE_MOVED);
	return 0;
}

/* A shared or slot holder's entry leaves, through our self-claim, verified
 * by the inode lfd pins (SM5): DS3's way when the entry is not empty after
 * its record went. 1 removed, 0 not there, <0. */
static int entry_remove_own(struct lk *l, int lfd, const char *entry, const char *token)
{
	/* the name is ours alone (SM1): taken at once, verified in the claim */
	struct stat mine, at;
	if (hf_sys_fstat(lfd, &mine) < 0)
		return 0;
	char claim[HF_CLAIM_NAME_MAX];
	int rc = claim_take(l, l->sfd, entry, token, claim, sizeof claim);
	if (rc == -ENOENT)
		return 0;
	if (rc < 0)
		return rc;
	rc = hf_sys_fstatat(l->sfd, claim, &at, AT_SYMLINK_NOFOLLOW);
	if (rc < 0)
		return rc == -ENOENT ? 0 : rc;
	if (at.st_dev != mine.st_dev || at.st_ino != mine.st_ino) {
		/* not ours (cannot be: the name is ours alone): back it goes */
		rc = hf_sys_renameat2(l->sfd, claim, l->sfd, entry, RENAME_NOREPLACE);
		return rc == -ENOENT || rc == -EEXIST ? 0 : rc;
	}
	return claim_remove(l, claim, ROLE(RELEASE));
}

/* DS3: the holder's own entry goes - its record through its descriptor
 * (DL1: only our attempt ever publishes into our directory, so the record
 * there is ours), then the directory by its name, which only our directory
 * ever bears (SM1: made by DS2's rename of our verified self-claim, never
 * put back by a reaper, DS5). Two system calls; the self-claim's way only
 * when the directory is not empty (a renewal's file in flight). 1 released,
 * 0 reaped (our record, or our directory at its name, was gone; a
 * record-less directory still at its name is removed), <0. */
static int entry_release_own(struct lk *l, int lfd, const char *entry, const char *token)
{
	int rc = hf_sys_unlinkat(lfd, "owner", 0);
	if (rc < 0 && rc != -ENOENT)
		return rc;
	bool had = rc == 0;
	hf_sys_point(HF_PT_DIRLOCK_RELEASE_UNLINKED);
	/* record-less from here; our kernel lock (live_fd) keeps reapers off
	 * until we close it (SM5, DL9); one that took it meanwhile leaves it
	 * in its claim, removed by a sweep once the lock is free. Without a
	 * record (a failed renewal unlinked it, DR5) the directory still goes
	 * if it is at its name: only ours is ever there (SM1) */
	rc = hf_sys_unlinkat(l->sfd, entry, AT_REMOVEDIR);
	if (rc == 0)
		return had;
	if (rc == -ENOENT || !had)
		return 0; /* taken meanwhile, or not ours any more: not released */
	return entry_remove_own(l, lfd, entry, token);
}

static int attempt(struct lk *l, const struct hf_lock_opts *o, const struct hf_waiter *w,
		   struct stage *st, struct hf_lock_info *ret, struct hf_lock_info *holder)
{
	struct hf_owner me;
	int rc = hf_owner_init(&me, o->pid);
	if (rc == 0)
		rc = hf_owner_chain_add(&me, o->chain, o->nchain); /* OW5 */
	if (rc < 0)
		return rc;
	me.lease_ms = o->lease_ms > 0 ? o->lease_ms : 0; /* OW6 */
	/* OW7: the owner is another process; our descriptor (live_fd), not
	 * its life, holds the kernel lock from here on. Not for a lock bound
	 * to its owner's life (max-hold none: run, flock, edit hold it from
	 * the owner's own parent): kept, it would never end for a judge in
	 * another pid namespace */
	int64_t hold = o->max_hold_ms > 0 ? o->max_hold_ms : l->max_hold_ms;
	me.kept = !me.lease_ms && o->pid > 0 && o->pid != hf_sys_getpid() && hold != HF_MAX_HOLD_NONE;
	if (st->fd < 0 && (rc = stage_make(l, st)) != 0)
		return rc < 0 ? held_over_write_error(l, rc, holder) : rc;
	if (l->look_first) {
		/* DQ6: L was taken a moment ago; judging what is there is what
		 * a refused rename would lead to, without the rename (a cross-
		 * directory one: the file system's rename lock). Free (or
		 * reaped): RETRY, and the next attempt renames. */
		l->look_first = false;
		return judge_and_reap(l, holder);
	}
	rc = hf_sys_renameat2(l->sfd, st->name, l->pfd, l->base, RENAME_NOREPLACE); /* DA1 */
	if ((rc == -EEXIST || rc == -ENOTEMPTY) && l->look_later)
		return TAKEN_UNSEEN; /* DQ6: judged after the registration */
	if (rc == -EEXIST || rc == -ENOTEMPTY)
		return judge_and_reap(l, holder); /* DA0's directory stays for the next try */
	if (rc == -ENOENT) {
		hf_sys_close(st->fd); /* swept meanwhile (it cannot be: we hold its lock) */
		st->fd = -1;
		return RETRY;
	}
	if (rc < 0)
		return rc; /* -EOPNOTSUPP: no RENAME_NOREPLACE here; never emulated */
	int lfd = st->fd; /* DA2: ours, at L, locked */
	st->fd = -1;
	hf_sys_point(HF_PT_DIRLOCK_ACQUIRE_MADE);
	hf_sys_point(HF_PT_DIRLOCK_ACQUIRE_OPENED);
	uint64_t f = 0;
	char rec[OWNER_MAX];
	size_t reclen = 0;
	const char *mine = NULL; /* our token once a record of ours may exist */
	char why[sizeof holder->reason] = "";
	rc = hf_fence_take(l->sfd, &l->ffd, l->sname, &f, holder ? holder->reason : why, sizeof why); /* DA3 */
	if (rc < 0)
		goto withdraw;
	hf_sys_point(HF_PT_DIRLOCK_ACQUIRE_FENCED);
	reclen = hf_dirlock_record_format(rec, &me, f, o->max_hold_ms > 0 ? o->max_hold_ms : l->max_hold_ms,
					  o->mode, o->slots);
	/* DA4, DL1: into the directory we opened and locked, through its
	 * descriptor. The unnamed temporary is made in the state directory and
	 * linked from there: a crowded parent's full inode groups would make an
	 * inode allocated beside it slow (ext4), and a named fallback temporary
	 * left by a crash lands in the state directory. */
	rc = hf_publish_file_via(l->sfd, lfd, "owner", rec, reclen, 0600, false);
	if (rc == -ENOENT)
		rc = RETRY; /* our directory was removed: reaped past the stale window */
	if (rc != 0)
		goto withdraw; /* nothing of ours was linked (FI1) */
	assert(reclen > 0 && reclen < OWNER_MAX && rec[reclen - 1] == '\n' && "DL1");
	mine = me.token;
	hf_sys_point(HF_PT_DIRLOCK_ACQUIRE_PUBLISHED);

	int stale = 0, entries = 0;
	rc = claims_check(l, holder, &stale, &entries); /* DA5, DL2b, DL8 */
	if (rc == HF_EBARRIER && holder && !strcmp(holder->owner.token, me.token))
		rc = RETRY; /* DL20: our own directory, taken by mistake */
	if (rc != 0)
		goto denied;
	hf_sys_point(HF_PT_DIRLOCK_ACQUIRE_SCANNED);

	char opath[NAME_MAX + 8], back[OWNER_MAX + 2]; /* DA6, DL2c */
	*hf_put_str(hf_put_str(opath, l->base), "/owner") = '\0';
	ssize_t backlen = read_small(l->pfd, opath, back);
	if (backlen >= 0)
		rc = (size_t)backlen == reclen && !memcmp(back, rec, reclen) ? 0 : RETRY;
	else if (backlen == -ENOENT || backlen == -ENOTDIR || backlen == -EFBIG)
		rc = RETRY;
	else
		rc = (int)backlen;
	if (rc != 0)
		goto denied;
	hf_sys_point(HF_PT_DIRLOCK_ACQUIRE_READBACK);

	/* DS1: no entry at DA5 (read after DA3), none to drain (SM2) */
	struct stand sd = { .me = &me, .fence = f, .hold = o->max_hold_ms > 0 ? o->max_hold_ms : l->max_hold_ms,
			    .mode = o->mode, .slots = o->slots, .rec = rec, .reclen = &reclen,
			    .written_ms = hf_sys_now_ms() };
	sd.window = me.lease_ms > 0 ? me.lease_ms : sd.hold; /* OW6; DL6: max(hold, stale) >= hold */
	if (entries > 0 && (rc = share_drain(l, o, w, lfd, &sd, holder)) != 0)
		goto denied;
	char entry[ENTRY_NAME_MAX] = "";
	if (o->mode != HF_MODE_EXCLUSIVE && (rc = share_move(l, lfd, mine, o->mode, f, entry)) != 0)
		goto denied; /* DS2 */

	rc = hf_fence_enter(l->ffd, f); /* DA7, DL2d, FC1, SM2: the last step */
	if (rc <= 0) {
		if (rc == 0)
			rc = RETRY;
		if (entry[0]) { /* our entry goes: record first (DL10), then it */
			entry_release_own(l, lfd, entry, mine);
			hf_sys_close(lfd);
			return rc;
		}
		goto denied;
	}
	/* DL2: published (a), looked (b), read back (c), fence checked (d) */
	assert(mine && rc == 1 && f > 0 && lfd >= 0 && l->ffd >= 0 && "DL2");
	hf_sys_point(HF_PT_DIRLOCK_ACQUIRE_ENTERED);
	memset(ret, 0, sizeof *ret);
	ret->owner = me;
	ret->fence = f;
	ret->max_hold_ms = o->max_hold_ms > 0 ? o->max_hold_ms : l->max_hold_ms;
	ret->mode = o->mode;
	ret->slots = o->mode == HF_MODE_SLOTS ? o->slots : 0;
	ret->state = HF_LOCK_HELD;
	ret->live_fd = lfd; /* DL9: the caller's now */
	if (o->kept) {
		o->kept->ffd = l->ffd; /* closed by the release, after L moved (DL17) */
		l->ffd = -1;
	}
	rc = 0;
	if (stale > 0)
		sweep(l); /* left-overs of crashes: tidy up, as the holder */
	goto out;

denied:
	hf_sys_point(HF_PT_DIRLOCK_ACQUIRE_DENIED);
withdraw:
	withdraw_own(l, lfd, mine); /* DW1, DW2 */
	hf_sys_close(lfd);          /* DW3 */
out:
	return rc;
}

/* DQ1: the directory the last attempt judged a live holder in is at L. */
static bool still_at_l(const struct lk *l)
{
	struct stat at;
	return hf_sys_fstatat(l->pfd, l->base, &at, AT_SYMLINK_NOFOLLOW) == 0 &&
	       at.st_dev == l->held_dev && at.st_ino == l->held_ino;
}

int hf_dirlock_acquire(const struct hf_lock_opts *o, struct hf_lock_info *ret,
		    struct hf_lock_info *reterr_holder)
{
	struct lk l;
	int rc = lk_open(&l, o->path, o->stale_ms, o->max_hold_ms);
	if (rc < 0)
		return rc;
	struct hf_waiter w;
	hf_wait_init(&w, l.parent, l.base, o->wait_ms);
	hf_wait_queue(&w, l.sfd, QUEUE_FILE); /* DQ1 */
	l.flag = o->wait_ms != 0;              /* DQ5 */
	if (o->has_cancel)
		hf_wait_set_cancel(&w, o->cancel_fd);
	struct hf_lock_info holder, got;
	memset(&holder, 0, sizeof holder);
	holder.live_fd = -1;
	struct stage st = { .fd = -1 };
	int retries = 0;
	for (;;) {
		l.held_ino = 0;
		l.look_later = l.flag && w.qdir >= 0 && !w.armed; /* DQ6 */
		rc = attempt(&l, o, &w, &st, &got, &holder);
		if (rc == TAKEN_UNSEEN) {
			/* DQ6, DQ1: in the queue (or on the watch), then the whole
			 * attempt; the point where a wait begins, as ever */
			hf_sys_point(HF_PT_DIRLOCK_ACQUIRE_WAITING);
			hf_wait_arm(&w);
			l.look_first = true;
			continue;
		}
		if (rc == 0 && o->mode != HF_MODE_EXCLUSIVE && w.efd >= 0)
			l.ring = true; /* DQ4: left L for its entry, from the queue */
		ring_due(&l, w.qfd); /* DQ2: before we sleep or leave */
		if (rc == 0)
			break;
		if (rc == RETRY) {
			if (++retries < 64 || o->wait_ms != 0)
				continue;
			rc = HF_EHELD; /* try once, but the lock kept changing hands */
		}
		if (rc == HF_EBARRIER) {
			int n = sweep(&l);
			if (n < 0) {
				rc = n;
				break;
			}
			if (n > 0)
				continue;
		} else if (rc != HF_EHELD && rc != HF_EUNREADABLE) {
			break; /* a system error, or a lost fence reservation */
		}
		if (rc == HF_EHELD && o->wait_ms < 0 && waits_for_itself(o, &holder)) {
			rc = -EDEADLK; /* DL13: it would wait for its own end */
			break;
		}
		if (rc == HF_EHELD && hf_lock_self_wait(&holder, o->wait_ms, l.stale_ms)) {
			rc = -EDEADLK; /* DL13, HL5: this thread holds it itself */
			break;
		}
		/* A live holder's release, reap or withdrawal moves L (an event on
		 * the watch); its end, when it is a process of our pid namespace,
		 * is a pidfd event (WT5). Barriers and unreadable records are
		 * resolved beside L, unseen: the short backoff. */
		if (l.flag_failed && w.qdir >= 0) /* DQ5: no mark, no ring: the watch
						     * instead; a ring spent on it is owed */
			hf_wait_unqueue(&w, w.woke == HF_WOKE_EVENT && !l.rang);
		if (rc == HF_EHELD)
			hf_wait_holder(&w, holder.partial ? 0 : hf_owner_local_pid(&holder.owner));
		if (rc == HF_EHELD && w.efd >= 0 && l.held_ino && !still_at_l(&l) &&
		    !hf_wait_expired(&w))
			continue; /* DQ1: marked, but it left L before the mark: look */
		if (o->wait_ms != 0)
			hf_fence_open(l.sfd, &l.ffd); /* before the sleep, not after the release
					 * (an error is met again by the attempt) */
		hf_sys_point(HF_PT_DIRLOCK_ACQUIRE_WAITING);
		int wrc = hf_wait_next(&w);
		l.rang = false;
		if (wrc == 0 && w.woke == HF_WOKE_ARMED && w.efd >= 0 && rc == HF_EHELD &&
		    l.held_ino && still_at_l(&l)) {
			/* DQ1: registered in the queue after the attempt; the
			 * holder judged live is still at L, so its leaving rings
			 * (DQ2) after our registration: sleep without an attempt */
			hf_sys_point(HF_PT_DIRLOCK_ACQUIRE_WAITING);
			wrc = hf_wait_next(&w);
			l.rang = false;
		}
		if (wrc == HF_ETIMEDOUT) {
			if (o->wait_ms != 0)
				rc = HF_ETIMEDOUT;
			break;
		}
		if (wrc < 0) {
			rc = wrc;
			break;
		}
		holder.reason[0] = '\0';
	}
	if (rc != 0) /* DQ3: a ring read and then an error: owed to the next */
		hf_wait_pass(&w, w.woke == HF_WOKE_EVENT && !l.rang && rc != HF_EHELD &&
					 rc != HF_ETIMEDOUT && rc != HF_ECANCELED);
	if (rc == 0 && o->kept) {
		/* DQ4: a holder that waited in the queue keeps its place there
		 * until its release (it is not asleep in it, so no ring is given
		 * to it), and rings through it: one write, and no closes on the
		 * way in */
		o->kept->qfd = w.qfd;
		o->kept->efd = w.efd;
		w.qfd = w.efd = -1;
	}
	hf_wait_done(&w);
	stage_drop(&l, &st);
	if (rc == 0 && o->kept) {
		/* DL17: the holder keeps its directories for its release */
		o->kept->pfd = l.pfd;
		o->kept->sfd = l.sfd;
		o->kept->nlink_counts = l.nlink_counts;
		l.pfd = l.sfd = -1;
	}
	lk_close(&l);
	if (rc == HF_FENCE_LOST || rc == DIR_FOREIGN)
		rc = HF_EUNREADABLE;
	if (rc == 0)
		*ret = got;
	else if (reterr_holder && rc != -ENOMEM)
		*reterr_holder = holder;
	return rc;
}

/* --- release and status ------------------------------------------------------- */

/* DL17: the holder's own release. Its directory, pinned by lfd, is at L:
 * then L's record is its own (DL1: only its attempt published into it, and
 * a directory whose record was removed never returns to L - removals happen
 * in a claim, DL3, and only what was verified is restored, DL4). So L is
 * taken into the holder's self-claim at once, without reading L's record
 * first, and verified there by the inode lfd pins (CL1: an inode number is
 * identity while a descriptor pins it) - one fstatat instead of opening and
 * reading the record before and after the move that wakes the waiters. On
 * a mismatch (L changed hands between the look and the take) what was
 * taken goes back (DL4). 1 removed, 0 not at L (the caller looks further,
 * DT), <0. */
static int release_own(struct lk *l, int lfd, const char *token)
{
	const struct role *role = ROLE(RELEASE);
	struct stat mine, at;
	if (hf_sys_fstat(lfd, &mine) < 0 ||
	    hf_sys_fstatat(l->pfd, l->base, &at, AT_SYMLINK_NOFOLLOW) < 0 ||
	    mine.st_dev != at.st_dev || mine.st_ino != at.st_ino)
		return 0;
	hf_sys_point(role->judged);
	char claim[HF_CLAIM_NAME_MAX];
	int rc = claim_take(l, l->pfd, l->base, token, claim, sizeof claim);
	if (rc == -ENOENT)
		return 0; /* moved first by someone else: look for it (DT) */
	if (rc < 0)
		return rc;
	hf_sys_point(role->taken);
	rc = hf_sys_fstatat(l->sfd, claim, &at, AT_SYMLINK_NOFOLLOW);
	if (rc == -ENOENT)
		return 0; /* stolen from us meanwhile (DL5): look for it */
	if (rc < 0)
		return rc; /* our claim stays: a barrier, swept when stale */
	hf_sys_point(role->verified);
	bool ours = at.st_dev == mine.st_dev && at.st_ino == mine.st_ino;
	if (at.st_mode & S_ISVTX)
		l->ring = true; /* DQ5: a waiter marked it before its sleep */
	/* DL19: a directory's link count is 2 + its subdirectories where the
	 * file system counts them (ext4, xfs, tmpfs); 1 (btrfs, ext4 past
	 * 65000) or more than 2 and the claim is listed. A release costs no
	 * directory read. */
	int sub = ours && at.st_nlink != 2 ? claim_has_subdir(l, claim) : 0;
	if (sub < 0)
		return sub;
	if (ours && !sub)
		return claim_remove(l, claim, role); /* DL3: verified in our claim */
	struct place now;
	rc = place_peek(l->sfd, claim, &now);
	if (rc < 0)
		return rc;
	place_done(&now);
	if (now.kind == REC_NONE)
		return 0;
	rc = claim_putback(l, claim, &now); /* DL4: not ours, back it goes; DL19 */
	return rc < 0 ? rc : sub ? HF_EFOREIGN_DIR : 0;
}

/* Release by token (DT) on an open lock, after release_own's first try
 * when lfd >= 0. */
static int release_in(struct lk *l, const char *token, int lfd,
		      struct hf_lock_info *reterr_holder)
{
	int rc = lfd >= 0 ? release_own(l, lfd, token) : 0;
	if (rc == 0)
		rc = withdraw(l, token, ROLE(RELEASE));
	if (rc == HF_EFOREIGN_DIR) {
		struct place p;
		if (place_read(l->pfd, l->base, &p) == 0) {
			place_done(&p);
			holder_from(reterr_holder, &p);
		}
		if (reterr_holder)
			snprintf(reterr_holder->reason, sizeof reterr_holder->reason,
				 "the lock directory holds a subdirectory, which holdfast never "
				 "makes nor removes: remove it by hand, then release again");
		rc = HF_EUNREADABLE; /* DL19: left at L, as it was */
	} else if (rc > 0) {
		rc = 0;
	} else if (rc == 0) {
		struct place p;
		rc = place_read(l->pfd, l->base, &p);
		if (rc == 0 && p.kind != REC_NONE) {
			judge(l, &p, p.ctime_ms, hf_sys_now_ms());
			place_done(&p);
			holder_from(reterr_holder, &p);
			rc = HF_ENOTYOURS;
		} else if (rc == 0) {
			rc = HF_ENOTHELD;
		}
	}
	return rc;
}

/* The entry (DS2) whose name ends in -<token>: 1 and name, 0 none, <0. */
struct entry_find {
	const char *token;
	char *name;
};

static int entry_find_cb(int dirfd, const char *name, void *ctx)
{
	(void)dirfd;
	struct entry_find *f = ctx;
	if (entry_mode(name) < 0 || strcmp(name + 23, f->token))
		return 0;
	snprintf(f->name, ENTRY_NAME_MAX, "%s", name);
	return 1;
}

static int entry_find(struct lk *l, const char *token, char *name)
{
	if (strlen(token) != HF_TOKEN_LEN)
		return 0;
	struct entry_find f = { .token = token, .name = name };
	return hf_dir_each(l->sfd, "", entry_find_cb, &f);
}

/* DS3 by token: the entry, verified by its record's token, through our
 * self-claim. 1 removed, 0 not found, <0. */
static int entry_release(struct lk *l, const char *token)
{
	char name[ENTRY_NAME_MAX];
	int rc = entry_find(l, token, name);
	if (rc <= 0)
		return rc;
	struct place p;
	if ((rc = place_peek(l->sfd, name, &p)) < 0)
		return rc;
	place_done(&p);
	if (p.kind != REC_OK || strcmp(p.info.owner.token, token))
		return 0; /* a withdrawal in flight: its own */
	return take_verify_remove(l, l->sfd, name, &p, token, ROLE(RELEASE));
}

int hf_dirlock_release(const char *path, const char *token, struct hf_lock_info *reterr_holder)
{
	if (!token || !*token)
		return -EINVAL;
	struct lk l;
	int rc = lk_open(&l, path, 0, 0);
	if (rc < 0)
		return rc;
	rc = release_in(&l, token, -1, reterr_holder);
	if (rc == HF_ENOTHELD || rc == HF_ENOTYOURS) {
		int e = entry_release(&l, token); /* a shared or slot holder's (DS3) */
		rc = e > 0 ? 0 : e < 0 ? e : rc;
	}
	lk_close(&l);
	return rc;
}

void hf_dirlock_kept_close(struct hf_dirlock_kept *k)
{
	if (!k)
		return;
	if (k->pfd >= 0)
		hf_sys_close(k->pfd);
	if (k->sfd >= 0)
		hf_sys_close(k->sfd);
	if (k->ffd >= 0)
		hf_sys_close(k->ffd);
	if (k->efd >= 0)
		hf_sys_close(k->efd);
	if (k->qfd >= 0)
		hf_sys_close(k->qfd);
	*k = HF_DIRLOCK_KEPT_NONE;
}

int hf_dirlock_release_kept(const char *path, const struct hf_lock_info *held,
			    struct hf_dirlock_kept *kept, struct hf_lock_info *reterr_holder)
{
	if (!held || !held->owner.token[0]) {
		hf_dirlock_kept_close(kept);
		return -EINVAL;
	}
	struct lk l;
	int rc;
	if (kept && kept->pfd >= 0 && kept->sfd >= 0) {
		/* DL17: the directories the acquisition opened, for this lock */
		rc = hf_path_split(path, l.parent, sizeof l.parent, l.base, sizeof l.base);
		if (rc == 0 && strlen(l.base) + strlen(STATE_SUFFIX) > NAME_MAX)
			rc = -EINVAL;
		if (rc < 0) {
			hf_dirlock_kept_close(kept);
			return rc;
		}
		*hf_put_str(hf_put_str(l.sname, l.base), STATE_SUFFIX) = '\0';
		l.pfd = kept->pfd;
		l.sfd = kept->sfd;
		l.ffd = -1; /* kept->ffd is closed after L moved */
		l.nlink_counts = kept->nlink_counts;
		l.stale_ms = HF_LOCK_STALE_MS_DEFAULT;
		l.max_hold_ms = HF_LOCK_MAX_HOLD_MS_DEFAULT;
		l.held_dev = 0;
		l.held_ino = 0;
		l.ring = l.rang = l.flag = l.flag_failed = false; /* as lk_open leaves them */
		l.look_later = l.look_first = false;
		kept->pfd = kept->sfd = -1; /* l's now */
	} else {
		rc = lk_open(&l, path, 0, 0);
		if (rc < 0) {
			hf_dirlock_kept_close(kept);
			return rc;
		}
	}
	rc = 0;
	if (held->mode != HF_MODE_EXCLUSIVE && held->fence && held->live_fd >= 0) {
		char entry[ENTRY_NAME_MAX]; /* DS3: named by its mode, fence, token */
		entry_name(entry, held->mode, held->fence, held->owner.token);
		rc = entry_release_own(&l, held->live_fd, entry, held->owner.token);
	}
	if (rc == 0)
		rc = release_in(&l, held->owner.token, held->live_fd, reterr_holder);
	else if (rc > 0)
		rc = 0;
	if (kept && kept->qfd >= 0)
		l.ring = true; /* DQ4: it came through the queue: rings in any case */
	ring_due(&l, kept ? kept->qfd : -1); /* DQ2, DQ4, DQ5 */
	lk_close(&l);
	hf_dirlock_kept_close(kept); /* the counter, after L moved */
	return rc;
}

/* --- renew (DR) ---------------------------------------------------------------- */

int hf_dirlock_renew(const char *path, const char *token, int64_t max_hold_ms,
		     struct hf_lock_info *ret, struct hf_lock_info *reterr_holder)
{
	if (!token || !*token || max_hold_ms < 0)
		return -EINVAL;
	struct lk l;
	int rc = lk_open(&l, path, 0, 0);
	if (rc < 0)
		return rc;
	/* DR1: the directory at L, pinned by its descriptor, and its record;
	 * DS4: a shared or slot holder's is its entry */
	struct place p;
	int wfd = l.pfd;
	const char *wname = l.base;
	char entry[ENTRY_NAME_MAX];
	rc = place_peek(l.pfd, l.base, &p);
	if (rc < 0)
		goto out;
	place_done(&p);
	if (!(p.kind == REC_OK && !strcmp(p.info.owner.token, token)) &&
	    (rc = entry_find(&l, token, entry)) != 0) {
		if (rc < 0)
			goto out;
		wfd = l.sfd;
		wname = entry;
	}
	rc = place_read(wfd, wname, &p);
	if (rc < 0)
		goto out;
	if (p.kind == REC_NONE) {
		rc = HF_ENOTHELD;
		goto out;
	}
	judge(&l, &p, p.ctime_ms, hf_sys_now_ms());
	if (p.kind != REC_OK || strcmp(p.info.owner.token, token) != 0) {
		holder_from(reterr_holder, &p);
		rc = HF_ENOTYOURS; /* another's, or no complete record: not ours */
		goto done;
	}
	if (p.info.state == HF_LOCK_DEAD) {
		holder_from(reterr_holder, &p);
		rc = HF_ELOST; /* DR2: its owner is gone; the next acquirer reaps it */
		goto done;
	}
	hf_sys_point(HF_PT_DIRLOCK_RENEW_JUDGED);
	/* DR3: the same owner, token and fence; the window starts now */
	struct hf_owner o = p.info.owner;
	hf_owner_restart(&o);
	int64_t hold = max_hold_ms > 0 ? max_hold_ms : p.info.max_hold_ms;
	char rec[OWNER_MAX];
	size_t reclen = hf_dirlock_record_format(rec, &o, p.info.fence, hold, p.info.mode, p.info.slots);
	/* DR4, DL14: replaced whole through the descriptor of the directory that
	 * held our record (a rename over our own record, in our own directory,
	 * wherever it has moved since: never into a directory at L that is
	 * another's, DL1) */
	assert(p.fd >= 0 && p.kind == REC_OK && !strcmp(p.info.owner.token, token) && "DR4");
	assert(reclen > 0 && rec[reclen - 1] == '\n' && "DL1"); /* a whole record */
	rc = hf_replace_file_at(p.fd, "owner", rec, reclen, 0600, false);
	if (rc == -ENOENT) {
		rc = HF_ELOST; /* reaped or released meanwhile: the directory is gone */
		goto done;
	}
	if (rc < 0)
		goto done;
	hf_sys_point(HF_PT_DIRLOCK_RENEW_REPLACED);
	/* DR5: still at L, with the renewed record? Else a reaper or a release
	 * has moved it: take the renewed record back through the descriptor
	 * (DL10), so no record of ours is left in someone's claim. */
	struct stat mine, at;
	char back[OWNER_MAX + 2];
	char opath[NAME_MAX + 8];
	*hf_put_str(hf_put_str(opath, wname), "/owner") = '\0';
	ssize_t bl = -1;
	bool kept = hf_sys_fstat(p.fd, &mine) == 0 &&
		    hf_sys_fstatat(wfd, wname, &at, AT_SYMLINK_NOFOLLOW) == 0 &&
		    mine.st_dev == at.st_dev && mine.st_ino == at.st_ino &&
		    (bl = read_small(wfd, opath, back)) >= 0 && (size_t)bl == reclen &&
		    !memcmp(back, rec, reclen);
	if (!kept) {
		if (read_small(p.fd, "owner", back) == (ssize_t)reclen && !memcmp(back, rec, reclen))
			hf_sys_unlinkat(p.fd, "owner", 0);
		rc = HF_ELOST;
		goto done;
	}
	if (ret) {
		memset(ret, 0, sizeof *ret);
		ret->owner = o;
		ret->fence = p.info.fence;
		ret->max_hold_ms = hold;
		ret->mode = p.info.mode;
		ret->slots = p.info.slots;
		ret->state = HF_LOCK_HELD;
		ret->live_fd = -1;
	}
	rc = 0;
done:
	place_done(&p);
out:
	lk_close(&l);
	return rc;
}

static int count_cb(int dirfd, const char *name, void *ctx)
{
	(void)dirfd;
	if (claim_time(name) >= 0)
		(*(int *)ctx)++;
	return 0;
}

/* Is the token's record anywhere: at L or in a claim? 1, 0, <0. */
static int record_exists(struct lk *l, const char *token)
{
	struct place p;
	int rc = at_l_is(l, token, &p);
	if (rc != 0)
		return rc;
	struct claim_list *cl = malloc(sizeof *cl);
	if (!cl)
		return -ENOMEM;
	rc = claims_list(l, cl);
	int found = 0;
	for (int i = 0; rc >= 0 && i < cl->n && !found; i++) {
		if (place_peek(l->sfd, cl->names[i], &p) < 0)
			continue;
		place_done(&p);
		found = p.kind == REC_OK && !strcmp(p.info.owner.token, token);
	}
	free(cl);
	return rc < 0 ? rc : found;
}

int hf_dirlock_hold(const char *path, const struct hf_lock_info *held, int *ret_guard)
{
	if (!held || !held->owner.token[0] || !held->fence)
		return -EINVAL;
	struct lk l;
	int rc = lk_open(&l, path, 0, 0);
	if (rc < 0)
		return rc;
	int fd = hf_sys_openat(l.sfd, HF_FENCE_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0);
	if (fd < 0) {
		lk_close(&l);
		return fd == -ENOENT ? HF_ELOST : fd;
	}
	rc = hf_fence_flock(fd, LOCK_SH);
	if (rc == -EBUSY)
		rc = -ETIMEDOUT;
	if (rc == 0 && held->mode != HF_MODE_EXCLUSIVE) {
		/* DL12 for an entry: under the same shared flock nobody enters;
		 * our entry, with our record at its name, is checked under it (not
		 * the counter's last entry: other shared holders enter after us) */
		char entry[ENTRY_NAME_MAX];
		struct place p;
		entry_name(entry, held->mode, held->fence, held->owner.token);
		rc = place_peek(l.sfd, entry, &p);
		if (rc == 0) {
			place_done(&p);
			rc = p.kind == REC_OK && !strcmp(p.info.owner.token, held->owner.token) ? 0
												: HF_ELOST;
		}
	} else if (rc == 0) {
		/* DL12: while we hold LOCK_SH nobody passes DA3 or DA7 (both take
		 * LOCK_EX): nobody enters until we let go. The last entry was ours
		 * (fences allocated since by attempts that were then denied do not
		 * count), and our record still exists, at L or aside in a claim
		 * (a barrier): neither reaped nor released. */
		struct hf_fence_line fl;
		rc = hf_fence_read(fd, &fl);
		if (rc == -ENODATA || rc == HF_EUNREADABLE ||
		    (rc == 0 && (strcmp(fl.boot, hf_boot_id()) || fl.entered != held->fence)))
			rc = HF_ELOST;
		if (rc == 0) {
			rc = record_exists(&l, held->owner.token);
			rc = rc == 1 ? 0 : rc == 0 ? HF_ELOST : rc;
		}
	}
	lk_close(&l);
	if (rc < 0) {
		hf_sys_close(fd);
		return rc;
	}
	*ret_guard = fd;
	return 0;
}

void hf_dirlock_unhold(int guard)
{
	if (guard >= 0)
		hf_sys_close(guard); /* drops the shared flock */
}

struct entries {
	struct lk *l;
	int64_t now;
	struct hf_lock_info *v;
	size_t n, cap;
	int rc;
};

static int entries_cb(int dirfd, const char *name, void *ctx)
{
	struct entries *e = ctx;
	if (entry_mode(name) < 0)
		return 0;
	struct place p;
	if (place_read(dirfd, name, &p) < 0)
		return 0; /* unreadable: the next look */
	if (p.kind != REC_OK) {
		place_done(&p);
		return 0; /* gone, or a withdrawal in flight (record-less): no holder */
	}
	judge(e->l, &p, p.ctime_ms, e->now); /* with its descriptor: DL9's proof */
	place_done(&p);
	if (e->n == e->cap) {
		size_t cap = e->cap ? e->cap * 2 : 8;
		if (cap > HF_SLOTS_MAX * 4)
			return 1; /* enough to show */
		struct hf_lock_info *v = realloc(e->v, cap * sizeof *v);
		if (!v) {
			e->rc = -ENOMEM;
			return 1;
		}
		e->v = v;
		e->cap = cap;
	}
	holder_from(&e->v[e->n], &p);
	e->n++;
	return 0;
}

static int by_fence(const void *a, const void *b)
{
	const struct hf_lock_info *x = a, *y = b;
	return x->fence < y->fence ? -1 : x->fence > y->fence;
}

int hf_dirlock_status(const char *path, struct hf_lock_info *ret)
{
	return hf_dirlock_status_all(path, ret, NULL, NULL);
}

int hf_dirlock_status_all(const char *path, struct hf_lock_info *ret,
			  struct hf_lock_info **entries, size_t *nentries)
{
	if (entries) {
		*entries = NULL;
		*nentries = 0;
	}
	struct lk l;
	memset(&l, 0, sizeof l);
	l.pfd = l.sfd = l.ffd = -1;
	l.stale_ms = HF_LOCK_STALE_MS_DEFAULT;
	l.max_hold_ms = HF_LOCK_MAX_HOLD_MS_DEFAULT;
	int rc = hf_open_parent(path, &l.pfd, l.base, sizeof l.base);
	if (rc < 0)
		return rc;
	if (name_reserved(l.base)) {
		lk_close(&l);
		return -EINVAL;
	}
	struct place p;
	rc = place_read(l.pfd, l.base, &p);
	if (rc < 0)
		goto out;
	judge(&l, &p, p.ctime_ms, hf_sys_now_ms());
	place_done(&p); /* a kernel lock the verdict took goes at once */
	/* read-only: the state directory is looked at, never created */
	snprintf(l.sname, sizeof l.sname, "%s%s", l.base, STATE_SUFFIX);
	int sfd = hf_sys_openat(l.pfd, l.sname, OPEN_DIR, 0);
	if (sfd >= 0) {
		rc = hf_claim_scan(sfd, CLAIM_PREFIX, count_cb, &p.info.claims);
		if (rc >= 0 && entries) {
			struct entries e = { .l = &l, .now = hf_sys_now_ms() };
			rc = hf_dir_each(sfd, "", entries_cb, &e);
			if (rc >= 0 && e.rc < 0)
				rc = e.rc;
			if (rc < 0) {
				free(e.v);
			} else {
				if (e.n > 1)
					qsort(e.v, e.n, sizeof *e.v, by_fence);
				*entries = e.v;
				*nentries = e.n;
			}
		}
		hf_sys_close(sfd);
		if (rc < 0)
			goto out;
	} else if (sfd != -ENOENT) {
		rc = sfd;
		goto out;
	}
	*ret = p.info;
	ret->live_fd = -1;
	rc = 0;
out:
	lk_close(&l);
	return rc;
}
