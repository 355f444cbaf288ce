/* threads: a pthread work queue. 4 workers take chunks of a range from a shared queue under a
 * mutex, sleep on a condition variable when it is empty, and hash their chunk into a slot of
 * its own; the main thread feeds the queue, joins the workers and prints a checksum that does
 * not depend on the schedule (and how many chunks the workers took in all). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define WORKERS 4
#define CHUNKS 256
#define CHUNK 20000

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t more = PTHREAD_COND_INITIALIZER;
static int queue[CHUNKS];
static int head, tail, closed;
static unsigned long results[CHUNKS];
static int done_by[WORKERS];

static unsigned long work(int chunk) {
    unsigned long h = 1469598103934665603ul ^ (unsigned long)chunk;
    for (int i = 0; i < CHUNK; i++) {
        h ^= (unsigned long)(chunk * CHUNK + i);
        h *= 1099511628211ul;
        if (h % 7 == 3) h += i;
    }
    return h;
}

static void *worker(void *arg) {
    int id = (int)(long)arg;
    for (;;) {
        pthread_mutex_lock(&lock);
        while (head == tail && !closed) pthread_cond_wait(&more, &lock);
        if (head == tail && closed) { pthread_mutex_unlock(&lock); return NULL; }
        int c = queue[head++];
        pthread_mutex_unlock(&lock);
        results[c] = work(c);
        done_by[id]++;
    }
}

int main(void) {
    pthread_t t[WORKERS];
    for (long i = 0; i < WORKERS; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)i) != 0) { perror("pthread_create"); return 1; }
    for (int c = 0; c < CHUNKS; c++) {
        pthread_mutex_lock(&lock);
        queue[tail++] = c;
        pthread_cond_signal(&more);
        pthread_mutex_unlock(&lock);
    }
    pthread_mutex_lock(&lock);
    closed = 1;
    pthread_cond_broadcast(&more);
    pthread_mutex_unlock(&lock);
    int total = 0;
    for (int i = 0; i < WORKERS; i++) { pthread_join(t[i], NULL); total += done_by[i]; }
    unsigned long sum = 0;
    for (int c = 0; c < CHUNKS; c++) sum = sum * 31 + results[c];
    printf("chunks %d\nchecksum threads %016lx\n", total, sum);
    return 0;
}
