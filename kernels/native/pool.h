/* The pool of threads the loops run their chunks on (kernels.native.clib; included once by loops.c). */
/* Threads: a pool of worker threads, started on first use, that join the caller in running one job at a time.
   A job is `chunks` calls run(args, chunk, member), claimed one by one under the pool's lock; member numbers the
   participant (0 for the caller, below `threads`), so that each has its own part of the working memory.  The caller
   claims chunks too, and waits only for chunks a worker has claimed: a worker that starts late, because another
   runtime's threads spin on the other cores (OpenBLAS's keep spinning long after a matrix product), finds nothing
   left and the caller has done the work, instead of waiting for it (an OpenMP team waited milliseconds there).
   A second caller while a job runs, or threads < 2, runs its chunks alone.  A worker that finishes waits for the
   next job by yielding its core for up to SPIN_NANOSECONDS before it sleeps: waking a sleeping thread took longer
   than a CG(4) product of 1,000 rows.
   With openmp (and a library built with OpenMP), the job runs on an OpenMP team instead: the pool torch's own
   operations use, whose threads are then awake, where this pool's workers would share their cores with them. */
#define SPIN_NANOSECONDS 200000
typedef void (*chunk_run)(const void *args, int64_t chunk, int64_t member);
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER, caller_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_wake = PTHREAD_COND_INITIALIZER, pool_done = PTHREAD_COND_INITIALIZER;
static int64_t workers, sleepers, generation, job_chunks, job_next, job_done, job_members, job_threads;
static chunk_run job_run;
static const void *job_args;

/* Claim and run the job's chunks until none is left (called and returning with pool_lock held). */
static void claim_chunks(int64_t member) {
    while (job_next < job_chunks) {
        const int64_t chunk = job_next++;
        const chunk_run run = job_run;
        const void *args = job_args;
        pthread_mutex_unlock(&pool_lock);
        run(args, chunk, member);
        pthread_mutex_lock(&pool_lock);
        if (++job_done == job_chunks) pthread_cond_signal(&pool_done);
    }
}

static int64_t nanoseconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

static void *worker(void *unused) {
    int64_t seen = 0;
    (void)unused;
    for (;;) {
        const int64_t until = nanoseconds() + SPIN_NANOSECONDS;
        while (__atomic_load_n(&generation, __ATOMIC_ACQUIRE) == seen && nanoseconds() < until) sched_yield();
        pthread_mutex_lock(&pool_lock);
        for (sleepers++; generation == seen; ) pthread_cond_wait(&pool_wake, &pool_lock);
        sleepers--;
        seen = generation;
        if (job_next < job_chunks && job_members < job_threads) claim_chunks(job_members++);
        pthread_mutex_unlock(&pool_lock);
    }
    return NULL;
}

static void parallel(chunk_run run, const void *args, int64_t chunks, int64_t threads, int64_t openmp) {
#ifdef _OPENMP
    if (openmp && threads > 1 && chunks > 1) {      /* no more than the caller's OpenMP threads (torch's setting) */
        const int team = threads < omp_get_max_threads() ? (int)threads : omp_get_max_threads();
        #pragma omp parallel for schedule(dynamic, 1) num_threads(team)
        for (int64_t chunk = 0; chunk < chunks; chunk++) run(args, chunk, omp_get_thread_num());
        return;
    }
#else
    (void)openmp;
#endif
    if (threads < 2 || chunks < 2 || pthread_mutex_trylock(&caller_lock) != 0) {
        for (int64_t chunk = 0; chunk < chunks; chunk++) run(args, chunk, 0);
        return;
    }
    pthread_mutex_lock(&pool_lock);
    for (pthread_t thread; workers < threads - 1 && pthread_create(&thread, NULL, worker, NULL) == 0; workers++)
        pthread_detach(thread);
    job_run = run, job_args = args, job_chunks = chunks, job_next = job_done = 0, job_members = 1;
    job_threads = threads;
    __atomic_store_n(&generation, generation + 1, __ATOMIC_RELEASE);
    if (sleepers) pthread_cond_broadcast(&pool_wake);
    claim_chunks(0);
    while (job_done < job_chunks) pthread_cond_wait(&pool_done, &pool_lock);
    pthread_mutex_unlock(&pool_lock);
    pthread_mutex_unlock(&caller_lock);
}

/* Where paths from `first` on keep their checkpoints in a loop's `kept` (NULL: none kept): each path (each block of
   paths, `words` counting the block's numbers a state) holds ceil(length / K) states of `words` numbers. */
#define KEPT_AT(kept, first, length, K, words) \
    ((kept) ? (kept) + (first) * (((length) + (K) - 1) / (K)) * (words) : NULL)

/* Chunks of whole blocks for `threads` threads: about four each, for balance, and no more than the blocks. */
static int64_t chunk_blocks(int64_t items, int64_t block, int64_t threads, int64_t *chunks) {
    const int64_t blocks = (items + block - 1) / block, wanted = threads < 2 ? 1 : 4 * threads;
    const int64_t each = blocks < wanted ? 1 : (blocks + wanted - 1) / wanted;
    *chunks = (blocks + each - 1) / each;
    return each * block;
}
