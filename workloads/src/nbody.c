/* nbody: gravitational N-body simulation in double precision.
 *
 * 24 bodies with pseudo-random masses on a rotating disc, softened gravity,
 * leapfrog (kick-drift-kick) integration. Exercises double-precision
 * add/mul/div/sqrt, fused multiply-add, and int<->double conversions.
 * Prints the total energy (printf "%.9f") along the way and a checksum of the
 * exact bit patterns of the final state. */
#include <stdio.h>
#include <string.h>
#include <math.h>

#define NB 24
#define STEPS 12000

struct body {
    double x, y, z, vx, vy, vz, mass;
};

static struct body bodies[NB];
static double ax[NB], ay[NB], az[NB];

static unsigned rng = 1u;

/* A uniform double in [0, 1) from a 32-bit LCG. */
static double uniform(void)
{
    rng = rng * 1664525u + 1013904223u;
    return (double)rng / 4294967296.0;
}

static const double softening2 = 1e-2;

static void accelerations(void)
{
    for (int i = 0; i < NB; i++) ax[i] = ay[i] = az[i] = 0.0;
    for (int i = 0; i < NB; i++) {
        for (int j = i + 1; j < NB; j++) {
            double dx = bodies[j].x - bodies[i].x;
            double dy = bodies[j].y - bodies[i].y;
            double dz = bodies[j].z - bodies[i].z;
            double r2 = dx * dx + dy * dy + dz * dz + softening2;
            double inv_r = 1.0 / sqrt(r2);
            double inv_r3 = inv_r * inv_r * inv_r;
            double fi = bodies[j].mass * inv_r3, fj = bodies[i].mass * inv_r3;
            ax[i] += dx * fi;
            ay[i] += dy * fi;
            az[i] += dz * fi;
            ax[j] -= dx * fj;
            ay[j] -= dy * fj;
            az[j] -= dz * fj;
        }
    }
}

static double energy(void)
{
    double e = 0.0;
    for (int i = 0; i < NB; i++) {
        const struct body *b = &bodies[i];
        e += 0.5 * b->mass * (b->vx * b->vx + b->vy * b->vy + b->vz * b->vz);
        for (int j = i + 1; j < NB; j++) {
            double dx = bodies[j].x - b->x, dy = bodies[j].y - b->y, dz = bodies[j].z - b->z;
            e -= b->mass * bodies[j].mass / sqrt(dx * dx + dy * dy + dz * dz + softening2);
        }
    }
    return e;
}

static void init(void)
{
    double total_mass = 0.0, px = 0.0, py = 0.0, pz = 0.0;
    for (int i = 0; i < NB; i++) {
        struct body *b = &bodies[i];
        double r = 0.5 + 4.5 * uniform();
        double angle = 6.283185307179586 * uniform();
        b->mass = i == 0 ? 50.0 : 0.05 + uniform();
        if (i == 0) {
            b->x = b->y = b->z = 0.0;
        } else {
            b->x = r * cos(angle);
            b->y = r * sin(angle);
            b->z = 0.2 * (uniform() - 0.5);
        }
        /* Roughly circular orbits around the heavy central body. */
        double v = i == 0 ? 0.0 : sqrt(50.0 / r);
        b->vx = -v * sin(angle);
        b->vy = v * cos(angle);
        b->vz = 0.0;
        total_mass += b->mass;
        px += b->mass * b->vx;
        py += b->mass * b->vy;
        pz += b->mass * b->vz;
    }
    /* Zero total momentum. */
    for (int i = 0; i < NB; i++) {
        bodies[i].vx -= px / total_mass;
        bodies[i].vy -= py / total_mass;
        bodies[i].vz -= pz / total_mass;
    }
}

static unsigned long long bits(double d)
{
    unsigned long long u;
    memcpy(&u, &d, sizeof u);
    return u;
}

int main(void)
{
    const double dt = 0.0005;
    init();
    double e0 = energy();
    printf("energy at step %5d: %.9f\n", 0, e0);
    accelerations();
    for (int step = 1; step <= STEPS; step++) {
        for (int i = 0; i < NB; i++) {
            struct body *b = &bodies[i];
            b->vx += 0.5 * dt * ax[i];
            b->vy += 0.5 * dt * ay[i];
            b->vz += 0.5 * dt * az[i];
            b->x += dt * b->vx;
            b->y += dt * b->vy;
            b->z += dt * b->vz;
        }
        accelerations();
        for (int i = 0; i < NB; i++) {
            bodies[i].vx += 0.5 * dt * ax[i];
            bodies[i].vy += 0.5 * dt * ay[i];
            bodies[i].vz += 0.5 * dt * az[i];
        }
        if (step % 4000 == 0) printf("energy at step %5d: %.9f\n", step, energy());
    }
    double e1 = energy();
    printf("relative energy drift %.3e\n", fabs((e1 - e0) / e0));

    unsigned long long check = 0;
    long farthest = 0;
    double far_r = 0.0;
    for (int i = 0; i < NB; i++) {
        const struct body *b = &bodies[i];
        check = (check << 7 | check >> 57) ^ bits(b->x) ^ bits(b->y) * 3 ^ bits(b->z) * 5;
        check ^= bits(b->vx) * 7 ^ bits(b->vy) * 11 ^ bits(b->vz) * 13;
        double r = sqrt(b->x * b->x + b->y * b->y + b->z * b->z);
        if (r > far_r) {
            far_r = r;
            farthest = i;
        }
    }
    printf("farthest body %ld at r = %.6f (as int %d)\n", farthest, far_r, (int)(far_r * 1000.0));
    printf("checksum nbody %016llx\n", check);
    return 0;
}
