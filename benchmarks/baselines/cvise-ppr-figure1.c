#include <stdint.h>
uint8_t g() {
  for (;;) {
    uint8_t b;
    if (0)
      b = g;
    else {
    }
    b = g;
  }
}
