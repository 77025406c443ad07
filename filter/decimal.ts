// Integers as decimal text, for messages and label values. The standard library's toString takes a
// radix at run time, so one call brings in its decimal, hex and any-radix printers for each integer
// type (about 600 bytes of the module); none of that is needed here.

/** `v` in decimal, with a leading '-' when negative. */
export function decimal(v: i64): string {
  let u: u64 = v < 0 ? <u64>0 - <u64>v : <u64>v;
  let s = "";
  do {
    s = String.fromCharCode(0x30 + <i32>(u % 10)) + s;
    u /= 10;
  } while (u != 0);
  return v < 0 ? "-" + s : s;
}
