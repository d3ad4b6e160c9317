int tally_limit_count;
void tally_limit() { tally_limit_count = tally_limit_count++; }
