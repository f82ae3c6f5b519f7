// SPDX-License-Identifier: GPL-2.0
/*
 * The command line read by argp, for any command: its groups of options
 * as argp children (so that `memtrace-bpf MODE --help` shows what that
 * command takes, under the groups' headers), each option applied by the
 * one parser of cli/opt.c, and the options of every other command hidden
 * and refused by name, naming the commands that take them. Knows no
 * option by itself: the commands' tables say everything.
 */
#include <argp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "cli/opts_common.h"
#include "cli/parse.h"
#include "lib/err.h"
#include "lib/version.h"

const char *argp_program_version = "memtrace-bpf " MT_VERSION;
const char *argp_program_bug_address =
	"<https://github.com/memtrace-bpf/memtrace-bpf/issues>";

/* the options of all groups together, at most, and the groups */
#define MAX_OPTS 96
#define MAX_GROUPS 16

/* not an option's key: what takes "-- COMMAND" (struct mt_cmd.command) */
#define KEY_COMMAND 0

/* every command's: -h as --help */
static const struct argp_option root_opts[] = {
	{ NULL, 'h', NULL, OPTION_HIDDEN, "Show the help", 0 },
	{ 0 },
};

/* what the parsers of one command's argp share (their state->input) */
struct parse_ctx {
	struct mt_options *o;
	const struct mt_cmd *cmd, *const *cmds;
	size_t ncmds;
	size_t nchildren; /* of the command's argp: its groups, the others */
	/* every command's groups, each once */
	const struct mt_opt_group *all[MAX_GROUPS];
	size_t nall;
};

static const char *mode_name(const struct mt_cmd *c)
{
	return c->name ? c->name : "trace";
}

/* the entry of key among cmd's groups; NULL if it takes none */
static const struct mt_opt *find_opt(const struct mt_cmd *cmd, int key)
{
	for (const struct mt_opt_group *const *g = cmd->groups; *g; g++)
		for (const struct mt_opt *p = (*g)->opts; p->kind; p++)
			if (p->arg.key == key)
				return p;
	return NULL;
}

/* whether cmd takes the option of key (KEY_COMMAND: a command) */
static bool takes(const struct mt_cmd *cmd, int key)
{
	return key == KEY_COMMAND ? cmd->command : find_opt(cmd, key) != NULL;
}

/* the groups of every command, each once, in the order they come */
static void collect_groups(struct parse_ctx *x)
{
	x->nall = 0;
	for (size_t i = 0; i < x->ncmds; i++) {
		for (const struct mt_opt_group *const *g = x->cmds[i]->groups;
		     *g; g++) {
			size_t k = 0;

			while (k < x->nall && x->all[k] != *g)
				k++;
			if (k == x->nall && x->nall < MAX_GROUPS)
				x->all[x->nall++] = *g;
		}
	}
}

/* "record", "trace and record", "report, script and estimate" */
static void modes_taking(const struct parse_ctx *x, int key, char *buf,
			 size_t len)
{
	size_t n = 0, k = 0, total = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < x->ncmds; i++)
		total += takes(x->cmds[i], key);
	for (size_t i = 0; i < x->ncmds && n < len; i++) {
		int w;

		if (!takes(x->cmds[i], key))
			continue;
		k++;
		w = snprintf(buf + n, len - n, "%s%s",
			     k == 1	? "" :
			     k == total ? " and " :
					  ", ",
			     mode_name(x->cmds[i]));
		if (w < 0)
			break;
		n += (size_t)w;
	}
}

/* what (an option, "a command") only the commands taking key take: exit 2 */
static void refuse(const struct parse_ctx *x, const char *what, int key)
{
	char modes[128];

	modes_taking(x, key, modes, sizeof(modes));
	mt_err("%s is for %s, not for %s (see --help)", what, modes,
	       mode_name(x->cmd));
	exit(2);
}

/* an option of the command's groups: applied by its entry */
static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	const struct parse_ctx *x = state->input;
	const struct mt_opt *opt = find_opt(x->cmd, key);
	const struct mt_unhonoured *u = x->cmd->unhonoured;

	if (!opt)
		return ARGP_ERR_UNKNOWN;
	/* refused before its value is read: the value does not matter */
	for (; u && u->key; u++) {
		if (u->key == key) {
			mt_err("%s", u->why);
			exit(2);
		}
	}
	mt_opt_apply(opt, x->o, arg);
	return 0;
}

/* an option of another command's groups: hidden here, refused by name */
static error_t parse_foreign(int key, char *arg, struct argp_state *state)
{
	const struct parse_ctx *x = state->input;
	char what[64];

	(void)arg;
	for (size_t g = 0; g < x->nall; g++) {
		for (const struct mt_opt *p = x->all[g]->opts; p->kind; p++) {
			if (p->arg.key != key)
				continue;
			/* as the user may have typed it: -p or --pid */
			if (key < 0x100)
				snprintf(what, sizeof(what), "-%c/--%s", key,
					 p->arg.name);
			else
				snprintf(what, sizeof(what), "--%s",
					 p->arg.name);
			refuse(x, what, key);
		}
	}
	return ARGP_ERR_UNKNOWN;
}

/* a word that names no command where one or an option goes: exit 2 */
static void not_a_command(const struct parse_ctx *x, const char *word)
{
	char modes[128];
	struct stat st;
	size_t n = 0;

	/* a record named as perf report takes one, without -i */
	if (!x->o->input && !stat(word, &st) && S_ISREG(st.st_mode)) {
		if (takes(x->cmd, 'i')) {
			mt_err("'%s' is not a command; to read it: "
			       "memtrace-bpf %s -i %s",
			       word, mode_name(x->cmd), word);
			exit(2);
		}
		if (!x->cmd->name) {
			mt_err("'%s' is not a command; to read a record: "
			       "memtrace-bpf report -i %s (a program to "
			       "trace goes after --)",
			       word, word);
			exit(2);
		}
	}
	modes[0] = '\0';
	for (size_t i = 0; i < x->ncmds && n < sizeof(modes); i++) {
		int w = snprintf(modes + n, sizeof(modes) - n, "%s%s",
				 i ? ", " : "", mode_name(x->cmds[i]));

		if (w < 0)
			break;
		n += (size_t)w;
	}
	mt_err("'%s' is not a command (%s; a program to trace goes after --)",
	       word, modes);
	exit(2);
}

static error_t parse_root(int key, char *arg, struct argp_state *state)
{
	struct parse_ctx *x = state->input;

	switch (key) {
	case ARGP_KEY_INIT:
		/* state->root_argp is argp's own wrapper: count ours */
		for (size_t i = 0; i < x->nchildren; i++)
			state->child_inputs[i] = x;
		break;
	case 'h':
		argp_state_help(state, stdout, ARGP_HELP_STD_HELP);
		break;
	case ARGP_KEY_ARG:
		/* a word before any "--": a mistyped command, not a program */
		if (state->next < 2 ||
		    strcmp(state->argv[state->next - 2], "--"))
			not_a_command(x, arg);
		if (!x->cmd->command)
			refuse(x, "a command", KEY_COMMAND);
		/* the first non-option starts the command (after "--") */
		x->o->command = &state->argv[state->next - 1];
		state->next = state->argc;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	(void)arg;
	return 0;
}

/* the command argv[1] names, taken out of argv; else the unnamed one */
static const struct mt_cmd *find_cmd(int *argc, char ***argv,
				     const struct mt_cmd *const *cmds,
				     size_t ncmds, char *name, size_t len)
{
	const struct mt_cmd *dflt = NULL;
	const char *base = strrchr((*argv)[0], '/');

	base = base ? base + 1 : (*argv)[0];
	for (size_t i = 0; i < ncmds; i++) {
		if (!cmds[i]->name)
			dflt = cmds[i];
		/* the unnamed command answers to "trace" too */
		if (*argc < 2 || strcmp((*argv)[1], mode_name(cmds[i])))
			continue;
		/* argp sees "memtrace-bpf MODE" as the program's name */
		snprintf(name, len, "%s %s", base, mode_name(cmds[i]));
		(*argv)[1] = name;
		(*argc)--;
		(*argv)++;
		return cmds[i];
	}
	return dflt;
}

/* what argp is given: the argp_option arrays our tables hold entries of */
struct argp_parts {
	struct argp root, foreign, groups[MAX_GROUPS];
	struct argp_child children[MAX_GROUPS + 2];
	/* the command's groups' options, each array ended by { 0 } */
	struct argp_option own[MAX_OPTS + MAX_GROUPS];
	struct argp_option others[MAX_OPTS + 1]; /* hidden, refused */
};

/*
 * The argp of x->cmd: its own groups, and the other groups' options
 * hidden. Returns the number of children.
 */
static size_t build_argp(const struct parse_ctx *x, struct argp_parts *a)
{
	const struct mt_cmd *cmd = x->cmd;
	size_t nc = 0, no = 0, nown = 0;

	for (size_t g = 0; g < MAX_GROUPS && cmd->groups[g]; g++) {
		struct argp_option *first = &a->own[nown];

		for (const struct mt_opt *p = cmd->groups[g]->opts;
		     p->kind && nown < MAX_OPTS; p++)
			a->own[nown++] = p->arg;
		a->own[nown++] = (struct argp_option){ 0 };
		a->groups[g] =
			(struct argp){ .options = first, .parser = parse_opt };
		/* the order the command lists its groups in, in --help */
		a->children[nc++] =
			(struct argp_child){ .argp = &a->groups[g],
					     .header = cmd->groups[g]->header,
					     .group = (int)g + 1 };
	}
	for (size_t g = 0; g < x->nall; g++) {
		for (const struct mt_opt *p = x->all[g]->opts; p->kind; p++) {
			bool dup = takes(cmd, p->arg.key);

			for (size_t i = 0; i < no && !dup; i++)
				dup = a->others[i].key == p->arg.key;
			if (dup || no == MAX_OPTS)
				continue;
			a->others[no] = p->arg;
			a->others[no++].flags |= OPTION_HIDDEN;
		}
	}
	a->others[no] = (struct argp_option){ 0 };
	a->foreign =
		(struct argp){ .options = a->others, .parser = parse_foreign };
	a->children[nc++] = (struct argp_child){ .argp = &a->foreign };
	a->children[nc] = (struct argp_child){ 0 };
	a->root = (struct argp){ .options = root_opts,
				 .parser = parse_root,
				 .doc = cmd->doc,
				 .children = a->children };
	return nc;
}

int mt_parse_options(int argc, char **argv, const struct mt_cmd *const *cmds,
		     size_t ncmds, struct mt_options *o,
		     const struct mt_cmd **cmd)
{
	struct argp_parts a;
	struct parse_ctx x;
	char name[256];

	*cmd = find_cmd(&argc, &argv, cmds, ncmds, name, sizeof(name));
	x = (struct parse_ctx){
		.o = o, .cmd = *cmd, .cmds = cmds, .ncmds = ncmds
	};
	collect_groups(&x);
	x.nchildren = build_argp(&x, &a);
	argp_err_exit_status = 2;
	mt_options_init(o, (*cmd)->mode);
	if (argp_parse(&a.root, argc, argv, ARGP_IN_ORDER, NULL, &x))
		return 2;
	if ((*cmd)->defaults)
		(*cmd)->defaults(o);
	return (*cmd)->check ? (*cmd)->check(*cmd, o) : 0;
}
