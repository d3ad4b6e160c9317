template <typename ARGS> void construct_at(void *at, ARGS args) {
  struct Placeable {
    Placeable(ARGS);
    void *operator new(__SIZE_TYPE__, void *);
    void operator delete(void *, void *);
  };
  new (at) Placeable(args);
}
void place_enum() {
  enum {};
  enum { ENUM_B };
  construct_at(0, ENUM_B);
}
