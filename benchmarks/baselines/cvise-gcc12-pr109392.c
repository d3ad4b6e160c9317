g_vec_v;
vec_barrier() __attribute__((returns_twice));
vec_step() {
  __attribute__((__vector_size__(sizeof(int)))) b;
  vec_barrier();
  b &= g_vec_v;
  vec_step(b);
}
