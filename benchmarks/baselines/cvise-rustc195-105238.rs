#![feature(generic_const_exprs)]
trait Ret { type R; }
struct Cond<const V>;
struct RobinHashTable<const usize, CellIdx = <Cond<{}> as Ret> : R>;
fn report0Vec { size_of::<RobinHashTable> }
