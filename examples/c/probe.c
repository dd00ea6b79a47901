/* Probes an Oware database from C: the published example position of the 2002 solution
 * (1 1 1 1 1 2 / 4 2 3 0 0 0, mover first: value 0, best move pit 5).
 *
 *   cc -I include examples/c/probe.c -L target/release -loware -o probe
 *   LD_LIBRARY_PATH=target/release ./probe databases [awari]
 */
#include <stdio.h>
#include <stdlib.h>
#include "oware.h"

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : "databases";
    const char *rules = argc > 2 ? argv[2] : "awari";
    char err[512];
    oware_db *db = oware_open(dir, rules, err, sizeof err);
    if (db == NULL) {
        fprintf(stderr, "oware_open: %s\n", err);
        return 2;
    }
    const uint8_t pits[12] = {1, 1, 1, 1, 1, 2, 4, 2, 3, 0, 0, 0};
    int8_t value;
    int rc = oware_value(db, pits, &value);
    if (rc != 0) {
        oware_last_error(err, sizeof err);
        fprintf(stderr, "oware_value: error %d: %s\n", rc, err);
        oware_close(db);
        return rc;
    }
    int8_t values[6];
    uint8_t legal[6];
    rc = oware_move_values(db, pits, values, legal);
    if (rc != 0) {
        oware_last_error(err, sizeof err);
        fprintf(stderr, "oware_move_values: error %d: %s\n", rc, err);
        oware_close(db);
        return rc;
    }
    printf("value %d\nmoves", value);
    for (int i = 0; i < 6; i++) {
        if (legal[i]) printf(" %d:%+d", i, values[i]);
    }
    printf("\n");
    /* Bad input is an error code, never a crash. */
    const uint8_t too_many[12] = {48, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    rc = oware_value(db, too_many, &value);
    oware_last_error(err, sizeof err);
    printf("49 stones: error %d: %s\n", rc, err);
    oware_close(db);
    return 0;
}
