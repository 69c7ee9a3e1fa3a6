/* cli.h: entry points of the command line. */
#ifndef TRIALQ_CLI_H
#define TRIALQ_CLI_H

int nnictl_main(int argc, char **argv);
int trialq_main(int argc, char **argv);

#endif
