package main

// The Lua VM Argo CD runs health checks in (util/lua/lua.go, util/lua/oslib_safe.go of Argo CD
// v3.5.1, on github.com/yuin/gopher-lua v1.1.2 and layeh.com/gopher-json, the versions Argo CD
// pins). Written for this project; the behaviour, not the code, follows Argo CD.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"
	luajson "layeh.com/gopher-json"
)

// HealthStatus is gitops-engine's pkg/health.HealthStatus: what a health.lua returns.
type HealthStatus struct {
	Status  string `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
}

// luaTimeout is the deadline util/lua/lua.go (runLuaWithResourceActionParameters) sets on
// every script run.
const luaTimeout = 1 * time.Second

// validHealthCodes follows isValidHealthStatusCode (util/lua/lua.go).
var validHealthCodes = map[string]bool{
	"Unknown": true, "Progressing": true, "Suspended": true, "Healthy": true, "Degraded": true, "Missing": true,
}

// runLua follows VM.runLuaWithResourceActionParameters (util/lua/lua.go): a state with the
// standard libraries only when openLibs (argocd-cm's `useOpenLibs`, always true for Argo CD's
// built-in scripts), then package, base, table and the "safe" os opened by name, `os`
// preloaded for require, a one second deadline, `actionParams` (empty for health) and `obj`.
func runLua(obj map[string]any, script string, openLibs bool) (*lua.LState, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: !openLibs})
	libraries := []struct {
		name string
		open lua.LGFunction
	}{
		{lua.LoadLibName, lua.OpenPackage},
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
		{lua.OsLibName, openSafeOs},
	}
	for _, library := range libraries {
		call := lua.P{Fn: l.NewFunction(library.open), NRet: 0, Protect: true}
		if err := l.CallByParam(call, lua.LString(library.name)); err != nil {
			l.Close()
			return nil, fmt.Errorf("opening %s: %w", library.name, err)
		}
	}
	l.PreloadModule(lua.OsLibName, safeOsLoader)
	ctx, cancel := context.WithTimeout(context.Background(), luaTimeout)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("actionParams", l.CreateTable(0, 0))
	l.SetGlobal("obj", toLua(l, obj))
	err := l.DoString(script)
	var apiErr *lua.ApiError
	if errors.As(err, &apiErr) && apiErr.Type == lua.ApiErrorRun {
		// Argo CD drops the Lua stack trace from run errors: users see the message only.
		apiErr.StackTrace = ""
		err = apiErr
	}
	return l, err
}

// toLua follows decodeValue (util/lua/lua.go): JSON-shaped Go values into Lua values; a
// json.Number becomes a string, anything unknown nil, lists are appended, maps raw-set.
func toLua(l *lua.LState, value any) lua.LValue {
	switch v := value.(type) {
	case nil:
		return lua.LNil
	case bool:
		return lua.LBool(v)
	case string:
		return lua.LString(v)
	case json.Number:
		return lua.LString(string(v))
	case float64:
		return lua.LNumber(v)
	case int:
		return lua.LNumber(v)
	case int32:
		return lua.LNumber(v)
	case int64:
		return lua.LNumber(v)
	case []any:
		table := l.CreateTable(len(v), 0)
		for _, item := range v {
			table.Append(toLua(l, item))
		}
		return table
	case map[string]any:
		table := l.CreateTable(0, len(v))
		for key, item := range v {
			table.RawSetH(lua.LString(key), toLua(l, item))
		}
		return table
	default:
		return lua.LNil
	}
}

// executeHealthLua follows VM.ExecuteHealthLua (util/lua/lua.go): the returned table goes
// through gopher-json and encoding/json into a HealthStatus; nil is an empty status; a table
// that does not decode as an object with string fields (an empty table encodes as `[]`)
// is an empty status too; an unknown status code is Unknown with Argo CD's message.
func executeHealthLua(obj map[string]any, script string, openLibs bool) (*HealthStatus, error) {
	l, err := runLua(obj, script, openLibs)
	if l != nil {
		defer l.Close()
	}
	if err != nil {
		return nil, err
	}
	result := l.Get(-1)
	switch result.Type() {
	case lua.LTNil:
		return &HealthStatus{}, nil
	case lua.LTTable:
	default:
		return nil, fmt.Errorf("expect %s output from Lua script, not %s", "table", result.Type().String())
	}
	encoded, err := luajson.Encode(result)
	if err != nil {
		return nil, err
	}
	status := &HealthStatus{}
	if err := json.Unmarshal(encoded, status); err != nil {
		// Argo CD tests errors.As against *json.UnmarshalTypeError, which any type error
		// satisfies, not only the "array" one it names.
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return &HealthStatus{}, nil
		}
		return nil, err
	}
	if !validHealthCodes[status.Status] {
		return &HealthStatus{Status: "Unknown", Message: "Lua returned an invalid health status"}, nil
	}
	return status, nil
}

// --- the safe os library (util/lua/oslib_safe.go) ---------------------------------------------

var safeOsFunctions = map[string]lua.LGFunction{"time": osTime, "date": osDate}

// openSafeOs follows OpenSafeOs: Argo CD registers the two functions under the module name
// lua.TabLibName ("table"), which is loaded by then, and gopher-lua's RegisterModule leaves a
// loaded module alone: no `os` global appears (unless the standard libraries are open, and
// then it is gopher-lua's full os); `require("os")` gets time and date (safeOsLoader).
func openSafeOs(l *lua.LState) int {
	l.Push(l.RegisterModule(lua.TabLibName, safeOsFunctions))
	return 1
}

// safeOsLoader follows SafeOsLoader: a fresh table with time and date.
func safeOsLoader(l *lua.LState) int {
	l.Push(l.SetFuncs(l.NewTable(), safeOsFunctions))
	return 1
}

// osTime follows osTime: now, or the time of a {year, month, day, hour, min, sec} table in
// the local zone with Argo CD's defaults (hour 12, day/month/year -1, isdst ignored).
func osTime(l *lua.LState) int {
	if l.GetTop() == 0 {
		l.Push(lua.LNumber(time.Now().Unix()))
		return 1
	}
	fields := l.CheckTable(1)
	number := func(name string, fallback int) int {
		if n, ok := fields.RawGetString(name).(lua.LNumber); ok {
			return int(n)
		}
		return fallback
	}
	at := time.Date(number("year", -1), time.Month(number("month", -1)), number("day", -1),
		number("hour", 12), number("min", 0), number("sec", 0), 0, time.Local)
	l.Push(lua.LNumber(at.Unix()))
	return 1
}

// osDate follows osDate: "%c" by default; a leading "!" means UTC; a second argument is a
// Unix time (local zone); "*t" gives a table (yday 0, isdst false); otherwise strftime.
func osDate(l *lua.LState) int {
	at := time.Now()
	format := "%c"
	if l.GetTop() >= 1 {
		format = l.CheckString(1)
		if strings.HasPrefix(format, "!") {
			at = time.Now().UTC()
			format = strings.TrimLeft(format, "!")
		}
		if l.GetTop() >= 2 {
			at = time.Unix(l.CheckInt64(2), 0)
		}
		if strings.HasPrefix(format, "*t") {
			table := l.NewTable()
			for name, value := range map[string]int{
				"year": at.Year(), "month": int(at.Month()), "day": at.Day(), "hour": at.Hour(),
				"min": at.Minute(), "sec": at.Second(), "wday": int(at.Weekday()) + 1, "yday": 0,
			} {
				table.RawSetString(name, lua.LNumber(value))
			}
			table.RawSetString("isdst", lua.LFalse)
			l.Push(table)
			return 1
		}
	}
	l.Push(lua.LString(strftime(at, format)))
	return 1
}

// strftimeLayouts is oslib_safe.go's table of C date flags and the Go layouts it uses.
var strftimeLayouts = map[byte]string{
	'a': "mon", 'A': "Monday", 'b': "Jan", 'B': "January", 'c': "02 Jan 06 15:04 MST", 'd': "02",
	'F': "2006-01-02", 'H': "15", 'I': "03", 'm': "01", 'M': "04", 'p': "PM", 'P': "pm", 'S': "05",
	'x': "15/04/05", 'X': "15:04:05", 'y': "06", 'Y': "2006", 'z': "-0700", 'Z': "MST",
}

// strftime follows strftime and its flagScanner: "%%" is "%", a "%" at the very end is kept,
// a known flag is formatted, %w is the weekday digit, any other flag is kept as written.
func strftime(at time.Time, format string) string {
	var out strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' || i == len(format)-1 {
			out.WriteByte(c)
			continue
		}
		i++
		flag := format[i]
		switch layout, known := strftimeLayouts[flag]; {
		case flag == '%':
			out.WriteByte('%')
		case known:
			out.WriteString(at.Format(layout))
		case flag == 'w':
			out.WriteString(strconv.Itoa(int(at.Weekday())))
		default:
			out.WriteByte('%')
			out.WriteByte(flag)
		}
	}
	return out.String()
}
