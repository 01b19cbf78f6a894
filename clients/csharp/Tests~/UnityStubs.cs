// Stand-ins for the few UnityEngine types the README's Unity example uses, so that the test
// build compiles the example (and runs it against laurel) without Unity. Only what the
// example touches, shaped as Unity's own.
using System;

namespace UnityEngine
{
    public class Object
    {
    }

    public class Component : Object
    {
    }

    public class Behaviour : Component
    {
        public bool enabled { get; set; } = true;
    }

    public class MonoBehaviour : Behaviour
    {
    }

    [AttributeUsage(AttributeTargets.Field)]
    public sealed class SerializeField : Attribute
    {
    }

    public static class Debug
    {
        public static void Log(object message) => Console.WriteLine(message);
        public static void LogWarning(object message) => Console.WriteLine("warning: " + message);
        public static void LogException(Exception exception) => Console.WriteLine(exception);
    }
}

namespace UnityEngine.UI
{
    public class Text : Behaviour
    {
        public virtual string text { get; set; }
    }
}
