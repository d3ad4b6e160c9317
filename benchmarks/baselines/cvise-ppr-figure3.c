int a;
void fn() {
  for (a = 0; a != 22; ++a)
    ;
}
