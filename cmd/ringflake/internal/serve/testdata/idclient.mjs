// idclient reads IDs from a ringflake serve, as a JavaScript caller would:
// fetch, then JSON.parse. For every ID it prints a line
//
//	PATH TYPE VALUE RAW
//
// TYPE is typeof the parsed ID, VALUE the parsed ID read back exactly
// (BigInt of a number, which fails unless it is an integer, gives every
// digit of the double it holds), and RAW the digits the server wrote. A
// number that JavaScript rounded shows as a VALUE unlike its RAW.
//
// Usage: node idclient.mjs BASE-URL PATH...
const [base, ...paths] = process.argv.slice(2);
for (const path of paths) {
  const res = await fetch(base + path);
  const text = await res.text();
  if (res.status !== 200) {
    throw new Error(`${path}: status ${res.status}: ${text}`);
  }
  const body = JSON.parse(text);
  const ids = "ids" in body ? body.ids : [body.id];
  const raw = text.match(/[0-9]+/g) ?? [];
  if (raw.length !== ids.length) {
    throw new Error(`${path}: ${ids.length} IDs parsed from ${raw.length} runs of digits in ${text}`);
  }
  ids.forEach((id, i) => {
    const value = typeof id === "number" ? BigInt(id).toString() : String(id);
    console.log(`${path} ${typeof id} ${value} ${raw[i]}`);
  });
}
