/* A stand-in for the NPU driver an Ethos-U firmware links: a driver handle to reserve and release,
 * and counters the test reads to see which device hooks the model called. */
#ifndef ETHOSU_MOD_H_
#define ETHOSU_MOD_H_

struct ethosu_driver {
  int reserved;
  int opened;
  int active;
  int launches;
};

struct ethosu_driver* ethosu_reserve_driver(void);
void ethosu_release_driver(struct ethosu_driver* drv);

#endif /* ETHOSU_MOD_H_ */
