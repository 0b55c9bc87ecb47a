#compdef spyder
# zsh completion for spyder: `source <(spyder completion zsh)`, or save it
# as _spyder in a directory of $fpath. It asks spyder itself what can come
# next, so it always matches the installed binary.
_spyder() {
	local -a opts
	# spyder prints the flags or commands that may stand at CURRENT, or
	# nothing where a file name or another value goes.
	opts=("${(@f)$(${words[1]} "${(@)words[2,CURRENT]}" --generate-bash-completion 2>/dev/null)}")
	opts=(${opts:#})
	if (( ${#opts} )); then
		_describe 'spyder' opts
	else
		_files
	fi
}
if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
	_spyder "$@"
else
	compdef _spyder spyder
fi
