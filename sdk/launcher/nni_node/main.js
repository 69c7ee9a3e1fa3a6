// trialq's nni_node: NNI's launcher names this file on the command line of `node`, whose
// stand-in in this folder (the `node` script) runs `trialq api` instead. Run by a real
// Node.js, it only says so.
console.error("this is trialq's nni_node: run ./node in this folder (it starts `trialq api`), not Node.js");
process.exit(1);
