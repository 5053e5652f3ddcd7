package main

// The cmp-server (the sidecar) and the repo-server's calls to it, for one plugin.yaml.
// Follows, in Argo CD v3.5.1: cmpserver/plugin/config.go (PluginConfig, ReadPluginConfig,
// ValidatePluginConfig, Address, Discover.IsDefined), cmpserver/plugin/plugin.go
// (runCommand, CmdError, environ, generateManifest, matchRepository), plugin_unix.go
// (process group), util/config/reader.go (unmarshalObject), util/io/files/tar.go and
// util/cmp/stream.go, util/io/files/util.go (the repository as the cmp-server receives it),
// util/app/discovery/discovery.go (DetectConfigManagementPlugin, cmpSupports) and
// reposerver/repository/repository.go (GenerateManifests, runConfigManagementPluginSidecars).
// The gRPC hop between repo-server and cmp-server is a function call here; an error
// crossing it reads "rpc error: code = Unknown desc = ..." as gRPC renders a plain error.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"

	securejoin "github.com/cyphar/filepath-securejoin"
	"github.com/mattn/go-zglob"
	"sigs.k8s.io/yaml"
)

type Command struct {
	Command []string `json:"command,omitempty"`
	Args    []string `json:"args,omitempty"`
}

type Find struct {
	Command
	Glob string `json:"glob"`
}

type Discover struct {
	Find     Find   `json:"find"`
	FileName string `json:"fileName"`
}

// IsDefined follows Discover.IsDefined: any of fileName, find.glob, find.command.
func (d Discover) IsDefined() bool {
	return d.FileName != "" || d.Find.Glob != "" || len(d.Find.Command.Command) > 0
}

type PluginConfig struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
	Metadata   struct {
		Name string `json:"name,omitempty"`
	} `json:"metadata"`
	Spec struct {
		Version    string   `json:"version"`
		Init       Command  `json:"init,omitempty"`
		Generate   Command  `json:"generate"`
		Discover   Discover `json:"discover"`
		Parameters struct {
			Static  []json.RawMessage `json:"static"`
			Dynamic Command           `json:"dynamic"`
		} `json:"parameters"`
		PreserveFileMode bool `json:"preserveFileMode,omitempty"`
		ProvideGitCreds  bool `json:"provideGitCreds,omitempty"`
	} `json:"spec"`
}

// readPluginConfig follows ReadPluginConfig: <dir>/plugin.yaml, YAML to JSON, then
// encoding/json (unknown fields ignored), then ValidatePluginConfig.
func readPluginConfig(dir string) (*PluginConfig, error) {
	data, err := os.ReadFile(strings.TrimRight(dir, "/") + "/plugin.yaml")
	if err != nil {
		return nil, err
	}
	data, err = yaml.YAMLToJSON(data)
	if err != nil {
		return nil, err
	}
	var config PluginConfig
	if err := json.Unmarshal(data, &config); err != nil {
		return nil, err
	}
	switch {
	case config.Metadata.Name == "":
		return nil, errors.New("invalid plugin configuration file. metadata.name should be non-empty")
	case config.Kind != "ConfigManagementPlugin":
		return nil, fmt.Errorf("invalid plugin configuration file. kind should be %s, found %s", "ConfigManagementPlugin", config.Kind)
	case len(config.Spec.Generate.Command) == 0:
		return nil, errors.New("invalid plugin configuration file. spec.generate command should be non-empty")
	}
	return &config, nil
}

// socketName follows PluginConfig.Address: "<name>.sock", or "<name>-<version>.sock".
func (c *PluginConfig) socketName() string {
	if c.Spec.Version != "" {
		return fmt.Sprintf("%s-%s.sock", c.Metadata.Name, c.Spec.Version)
	}
	return c.Metadata.Name + ".sock"
}

// CmpServer is one sidecar: its plugin.yaml, its own environment (the container's, which
// runCommand puts before the repo-server's variables), its work directory.
type CmpServer struct {
	Config  *PluginConfig
	Environ []string
	WorkDir string
}

// argsToLog follows GetCommandArgsToLog (util/exec/exec.go): arguments with white space
// quoted, empty ones as "".
func argsToLog(args []string) string {
	out := make([]string, len(args))
	for i, arg := range args {
		switch {
		case arg == "":
			out[i] = `""`
		case strings.IndexFunc(arg, unicode.IsSpace) >= 0:
			out[i] = strconv.Quote(arg)
		default:
			out[i] = arg
		}
	}
	return strings.Join(out, " ")
}

// runCommand follows runCommand and newCmdError: argv (command then args) without a shell, in
// the application directory, with exactly the given environment, in its own process group;
// on the deadline the group gets SIGTERM and, five seconds later, SIGKILL (exec's context
// kills the leader at once); a failure reads "`<argv>` failed <cause>: <stderr trimmed>";
// the output loses one trailing newline.
func runCommand(ctx context.Context, command Command, dir string, env []string) (string, error) {
	if len(command.Command) == 0 {
		return "", errors.New("Command is empty")
	}
	cmd := exec.CommandContext(ctx, command.Command[0], append(command.Command[1:], command.Args...)...)
	cmd.Env = env
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
		case <-done:
			return
		}
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-time.After(5 * time.Second):
		case <-done:
		}
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}()
	err := cmd.Wait()
	output := strings.TrimSuffix(stdout.String(), "\n")
	if err != nil {
		message := fmt.Sprintf("`%v` failed %v", argsToLog(cmd.Args), err)
		if trimmed := strings.TrimSpace(stderr.String()); trimmed != "" {
			message += ": " + trimmed
		}
		return output, errors.New(message)
	}
	return output, nil
}

// environ follows environ (plugin.go): entries with a name, as NAME=value.
func environ(entries []string) []string {
	var out []string
	for _, entry := range entries {
		name, value, ok := strings.Cut(entry, "=")
		if ok && name != "" { // toEnvEntry (util/cmp/stream.go) drops entries without "="
			out = append(out, name+"="+value)
		}
	}
	return out
}

// receiveRepository stands for SendRepoStream + ReceiveRepoStream (util/cmp/stream.go,
// util/io/files/tar.go): the repository root copied into a fresh directory under the
// cmp-server's work directory; only regular files, directories and symbolic links travel;
// directories arrive 0755 and files 0644 unless preserveFileMode; a repository with no
// file is refused. Returns the copy and the application's path relative to it.
func (s *CmpServer) receiveRepository(repoRoot, appPath string) (string, string, error) {
	if err := os.MkdirAll(s.WorkDir, 0o700); err != nil {
		return "", "", err
	}
	dest, err := os.MkdirTemp(s.WorkDir, "")
	if err != nil {
		return "", "", fmt.Errorf("error creating temp dir: %w", err)
	}
	written := 0
	err = filepath.Walk(repoRoot, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return fmt.Errorf("error walking in %q: %w", repoRoot, err)
		}
		rel, _ := filepath.Rel(repoRoot, path)
		target := filepath.Join(dest, rel)
		mode := info.Mode()
		switch {
		case mode.IsDir():
			perm := os.FileMode(0o755)
			if s.Config.Spec.PreserveFileMode {
				perm = mode.Perm()
			}
			return os.MkdirAll(target, perm)
		case mode&os.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			written++
			// untar: the link resolved inside the copy must stay inside it, and is made relative.
			linkTarget := filepath.Join(filepath.Dir(target), link)
			resolved, err := filepath.EvalSymlinks(linkTarget)
			if os.IsNotExist(err) {
				resolved = linkTarget
			} else if err != nil {
				return fmt.Errorf("error checking symlink realpath: %w", err)
			}
			if !inbound(resolved, dest) {
				return fmt.Errorf("illegal filepath in symlink: %s", linkTarget)
			}
			relative, err := filepath.Rel(filepath.Dir(target), resolved)
			if err != nil {
				return fmt.Errorf("error relativizing link target: %w", err)
			}
			return os.Symlink(relative, target)
		case mode.IsRegular():
			perm := os.FileMode(0o644)
			if s.Config.Spec.PreserveFileMode {
				perm = mode.Perm()
			}
			written++
			return copyFile(path, target, perm)
		}
		return nil
	})
	if err == nil && written == 0 {
		err = fmt.Errorf("no files to send(%s)", repoRoot)
	}
	if err != nil {
		os.RemoveAll(dest)
		return "", "", err
	}
	rel, err := filepath.Rel(repoRoot, appPath)
	return dest, rel, err
}

// inbound follows files.Inbound (util/io/files/util.go): the candidate (relative ones taken
// from base) lies strictly under an absolute base.
func inbound(candidate, base string) bool {
	if !filepath.IsAbs(base) {
		return false
	}
	target := filepath.Join(base, candidate)
	if filepath.IsAbs(candidate) {
		target = filepath.Clean(candidate)
	}
	return strings.HasPrefix(target, filepath.Clean(base)+string(os.PathSeparator))
}

func copyFile(from, to string, perm os.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(to, os.O_RDWR|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if closeErr := out.Close(); err == nil {
		err = closeErr
	}
	return err
}

// rpcError is what a plain error returned by a gRPC handler becomes at the caller.
func rpcError(err error) error {
	return fmt.Errorf("rpc error: code = Unknown desc = %s", err.Error())
}

// matchRepository follows Service.matchRepository (and matchRepositoryGeneric around it):
// fileName with filepath.Glob, else find.glob with zglob, else find.command, which matches
// when it succeeds and prints something; (supported, discovery enabled, error).
func (s *CmpServer) matchRepository(ctx context.Context, repoRoot, appPath string, env []string) (bool, bool, error) {
	workdir, appRel, err := s.receiveRepository(repoRoot, appPath)
	if err != nil {
		return false, false, rpcError(fmt.Errorf("match repository error receiving stream: %w", err))
	}
	defer os.RemoveAll(workdir)
	app, _ := securejoin.SecureJoin(workdir, appRel)
	discover := s.Config.Spec.Discover
	if discover.FileName != "" {
		pattern := filepath.Join(app, discover.FileName)
		matches, err := filepath.Glob(pattern)
		if err != nil {
			return false, true, rpcError(fmt.Errorf("match repository error: %w", fmt.Errorf("error finding filename match for pattern %q: %w", pattern, err)))
		}
		return len(matches) > 0, true, nil
	}
	if discover.Find.Glob != "" {
		pattern := filepath.Join(app, discover.Find.Glob)
		matches, err := zglob.Glob(pattern)
		if err != nil {
			return false, true, rpcError(fmt.Errorf("match repository error: %w", fmt.Errorf("error finding glob match for pattern %q: %w", pattern, err)))
		}
		return len(matches) > 0, true, nil
	}
	if len(discover.Find.Command.Command) > 0 {
		found, err := runCommand(ctx, discover.Find.Command, app, append(append([]string{}, s.Environ...), environ(env)...))
		if err != nil {
			return false, true, rpcError(fmt.Errorf("match repository error: %w", fmt.Errorf("error running find command: %w", err)))
		}
		return found != "", true, nil
	}
	return false, false, nil
}

// cmpSupports follows cmpSupports (util/app/discovery/discovery.go): the socket must exist;
// a plugin without discovery matches only when named; with discovery, it matches when
// discovery says so, or when named and discovery is not enabled; an error while matching
// is an error.
func (s *CmpServer) cmpSupports(ctx context.Context, repoRoot, appPath, socket string, env []string, named bool) (bool, error) {
	if socket != s.Config.socketName() {
		// The harness's wording: Argo CD reports gRPC's dial error for the missing socket.
		return false, fmt.Errorf("error dialing to cmp-server for plugin %s: no such socket", socket)
	}
	if !s.Config.Spec.Discover.IsDefined() {
		return named, nil
	}
	supported, enabled, err := s.matchRepository(ctx, repoRoot, appPath, env)
	if err != nil {
		return false, fmt.Errorf("error checking repository support for plugin %s: %w", socket,
			fmt.Errorf("error receiving stream response: %w", err))
	}
	if !supported {
		return !enabled && named, nil
	}
	return true, nil
}

// detectPlugin follows DetectConfigManagementPlugin: a named plugin is looked up by socket
// "<name>.sock"; without a name every socket (here the one sidecar) is asked.
func (s *CmpServer) detectPlugin(ctx context.Context, repoRoot, appPath, pluginName string, env []string) error {
	if pluginName != "" {
		found, err := s.cmpSupports(ctx, repoRoot, appPath, pluginName+".sock", env, true)
		if !found {
			if err != nil {
				return fmt.Errorf("could not find cmp-server plugin with name %q supporting the given repository: %w", pluginName, err)
			}
			return fmt.Errorf("could not find cmp-server plugin with name %q supporting the given repository", pluginName)
		}
		return nil
	}
	found, err := s.cmpSupports(ctx, repoRoot, appPath, s.Config.socketName(), env, false)
	if !found {
		if err != nil {
			return fmt.Errorf("could not find plugin supporting the given repository: %w", err)
		}
		return errors.New("could not find plugin supporting the given repository")
	}
	return nil
}

// generateManifest follows generateManifestGeneric and generateManifest: the repository
// received into a fresh directory, the sidecar's environment then the repo-server's
// variables, init (if any) then generate in the application directory, the output split
// into documents (SplitYAMLToString).
func (s *CmpServer) generateManifest(ctx context.Context, repoRoot, appPath string, env []string) ([]string, error) {
	workdir, appRel, err := s.receiveRepository(repoRoot, appPath)
	if err != nil {
		return nil, rpcError(fmt.Errorf("generate manifest error receiving stream: %w", err))
	}
	defer os.RemoveAll(workdir)
	app := filepath.Clean(filepath.Join(workdir, appRel))
	if !strings.HasPrefix(app, workdir) {
		return nil, rpcError(errors.New("illegal appPath: out of workDir bound"))
	}
	full := append(append([]string{}, s.Environ...), environ(env)...)
	if len(s.Config.Spec.Init.Command) > 0 {
		if _, err := runCommand(ctx, s.Config.Spec.Init, app, full); err != nil {
			return nil, rpcError(fmt.Errorf("error generating manifests: %w", err))
		}
	}
	out, err := runCommand(ctx, s.Config.Spec.Generate, app, full)
	if err != nil {
		return nil, rpcError(fmt.Errorf("error generating manifests: %w", err))
	}
	manifests, err := splitYAMLToString([]byte(out))
	if err != nil {
		return nil, rpcError(fmt.Errorf("error generating manifests: %w", err))
	}
	return manifests, nil
}
